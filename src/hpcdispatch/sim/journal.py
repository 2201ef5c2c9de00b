"""A decision journal: resume a long simulation after an interruption without recomputing.

A CP dispatcher on a congested whole trace spends hours in its solver (SDSC-SP2: about
15,000 decisions that build a model, most of them using the whole time limit). When such a
run is interrupted, everything it computed is lost unless the decisions were written down.
The journal is that record: one JSON line per dispatcher call, appended and flushed as the
call returns. Started again with the same journal, the simulator *replays* the recorded
decisions instead of calling the dispatcher, checking each against the simulation state it
reaches (time, queue), and calls the dispatcher for real from the first unrecorded call on.
Because the simulation is deterministic given its decisions, the resumed run is the run
that would have happened without the interruption, and the decision log keeps every
decision's original wall-clock time (also what ``--charge-dispatch-time`` charges).

Only dispatchers whose decisions depend on the view alone may skip calls (``Tags.memoryless``:
state kept between calls, if any, is a cache that a fresh instance rebuilds). Others are
refused with a clear error, since a replay would leave their memory behind.

The file is JSON lines; its format is in the docs page below.

Design notes, decisions and measurements: docs/ARCHITECTURE.md,
"From the module docstrings".
"""

from __future__ import annotations

import json
import math
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

if sys.platform == "win32":  # pragma: no cover - Windows: no lock
    fcntl = None
else:  # POSIX: one writer per journal
    import fcntl

from hpcdispatch._util import json_default
from hpcdispatch.errors import ConfigError
from hpcdispatch.protocol.decision import Decision, Start
from hpcdispatch.sim.result import JournalUse
from hpcdispatch.system.allocation import Allocation
from hpcdispatch.workload.job import Job

FORMAT = 2  # 2: the run's dispatcher is its identity, {"name": ..., "params": {...}}


class JournalError(ConfigError):
    """A journal that cannot be used: another run's, damaged, or diverging from the replay."""


def _head(queue: dict[int, Job]) -> int | None:
    """Id of the first queued job (the queue dict keeps submission order)."""
    return next(iter(queue.values())).id if queue else None


def run_differences(
    theirs: dict[str, Any], ours: dict[str, Any], equivalent: dict[str, Callable[[Any], bool]]
) -> list[str]:
    """The fields in which a saved run description (``theirs``) differs from this run's,
    except where ``equivalent``'s predicate accepts the saved value."""
    return sorted(
        k
        for k in set(theirs) | set(ours)
        if theirs.get(k) != ours.get(k)
        and not (k in theirs and k in equivalent and equivalent[k](theirs[k]))
    )


_RECORD_KEYS = ("k", "t", "queue", "head", "starts", "wakeup", "elapsed")
_BIG = 2**62  # integers beyond this are no index, id or node (and no int64)


def _is_int(v: Any, low: int = -_BIG) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and low <= v < _BIG


def _is_number(v: Any) -> bool:
    return (
        isinstance(v, (int, float))
        and not isinstance(v, bool)
        and not (isinstance(v, float) and math.isnan(v))
    )


def _record_problem(rec: dict[str, Any]) -> tuple[str, str] | None:
    """``(field, what is wrong)`` with a record's form, or None (its content is checked
    against the simulation when it is replayed)."""
    for key in _RECORD_KEYS:
        if key not in rec:
            return key, f"missing (a record has {', '.join(_RECORD_KEYS)} and info)"
    if not _is_number(rec["t"]) or not math.isfinite(rec["t"]):
        return "t", f"must be a time (a finite number), got {str(rec['t'])[:60]}"
    if not _is_int(rec["queue"], 0):
        return "queue", f"must be a queue length, got {str(rec['queue'])[:60]}"
    if rec["head"] is not None and not _is_int(rec["head"]):
        return "head", f"must be a job id or null, got {str(rec['head'])[:60]}"
    if rec["wakeup"] is not None and not _is_number(rec["wakeup"]):
        return "wakeup", f"must be a time or null, got {str(rec['wakeup'])[:60]}"
    if not _is_number(rec["elapsed"]) or not 0 <= rec["elapsed"] < math.inf:
        return "elapsed", f"must be seconds (a finite number >= 0), got {str(rec['elapsed'])[:60]}"
    if rec.get("info") is not None and not isinstance(rec["info"], dict):
        return "info", f"must be an object or null, got {str(rec['info'])[:60]}"
    starts = rec["starts"]
    if not isinstance(starts, list):
        return (
            "starts",
            f"must be a list of [job index, job id, [nodes], [units]], got {str(starts)[:60]}",
        )
    for i, start in enumerate(starts):
        if not (
            isinstance(start, list)
            and len(start) == 4
            and _is_int(start[0], 0)
            and _is_int(start[1])
            and isinstance(start[2], list)
            and isinstance(start[3], list)
            and all(_is_int(n, 0) for n in start[2])
            and all(_is_int(u) for u in start[3])
        ):
            return (
                "starts",
                f"entry {i} must be [job index, job id, [nodes], [units]], got {str(start)[:80]}",
            )
        nodes, units = start[2], start[3]
        if len(nodes) != len(units):
            return "starts", f"entry {i} has {len(nodes)} nodes but {len(units)} unit counts"
        if len(set(nodes)) != len(nodes):
            return "starts", f"entry {i} (job {start[1]}) lists a node twice: {nodes}"
    return None


class DecisionJournal:
    """Records dispatcher calls to ``path`` and replays the ones already there.

    ``run`` describes the simulation (JSON-able); it is written as the header of a new
    journal and must equal the header of an existing one, except in the fields of
    ``equivalent``, where a predicate of the existing header's value decides (e.g. a
    dispatcher identity written before a parameter was added, see
    ``Dispatcher.matches_identity``).
    """

    def __init__(
        self,
        path: str | Path,
        run: dict[str, Any],
        equivalent: dict[str, Callable[[Any], bool]] | None = None,
    ):
        self.path = Path(path)
        self.run = json.loads(json.dumps(run, default=json_default))
        self.equivalent = equivalent or {}
        self._records: list[dict[str, Any]] = []
        self.replayed = 0
        self.recorded = 0
        if self.path.is_dir():
            raise JournalError(f"{self.path} is a directory, not a decision journal")
        self._lock = self._acquire()
        try:
            if self.path.exists() and self.path.stat().st_size > 0:
                self._load()
            else:
                with self.path.open("w", encoding="utf-8") as fh:
                    fh.write(json.dumps({"journal": FORMAT, "run": self.run}) + "\n")
            self._fh = self.path.open("a", encoding="utf-8")
        except OSError as exc:
            self._release()
            raise JournalError(f"cannot write the decision journal {self.path}: {exc}") from None
        except BaseException:
            self._release()
            raise

    def _acquire(self):
        """An exclusive lock (``<journal>.lock``): two runs appending to one journal would
        interleave their records."""
        if fcntl is None:
            return None
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            lock_path.parent.mkdir(parents=True, exist_ok=True)
            fh = lock_path.open("w")
        except OSError as exc:
            raise JournalError(
                f"cannot write the decision journal's lock {lock_path}: {exc}"
            ) from None
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise JournalError(
                f"{self.path} is in use by another process (lock {lock_path})"
            ) from None
        return fh

    # ---- reading ---------------------------------------------------------------------------
    def _load(self) -> None:
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        cut = None if raw.endswith(b"\n") else len(raw) - len(lines[-1])
        lines = lines[:-1]  # after the last newline: empty, or the dropped partial line
        try:
            header = json.loads(lines[0])
        except (
            ValueError,
            RecursionError,
            IndexError,
        ):  # (not JSON, not UTF-8 text, nested too deep)
            raise JournalError(f"{self.path}, line 1: not a decision journal header") from None
        if not isinstance(header, dict) or "journal" not in header:
            raise JournalError(
                f"{self.path}, line 1: not a decision journal (format {FORMAT}) header"
            )
        if header.get("journal") != FORMAT:
            raise JournalError(
                f"{self.path}, line 1: a decision journal of format {str(header.get('journal'))[:20]}; this version "
                f"reads format {FORMAT} (format 1 named the dispatcher by its printed description). Finish "
                "the run with the version that wrote the journal, or delete it to start again"
            )
        if not isinstance(header.get("run") or {}, dict):
            raise JournalError(
                f"{self.path}, line 1, field 'run': must be an object, got {header.get('run')!r}"
            )
        fields = run_differences(header.get("run") or {}, self.run, self.equivalent)
        if fields:
            raise JournalError(
                f"{self.path} was written for another run (differs in: {', '.join(fields)}); "
                "use a new journal file or delete this one"
            )
        for lineno, line in enumerate(lines[1:], start=2):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise JournalError(
                    f"{self.path}, line {lineno}: damaged record ({exc.msg})"
                ) from None
            except UnicodeDecodeError:
                raise JournalError(
                    f"{self.path}, line {lineno}: damaged record (not UTF-8 text)"
                ) from None
            except (ValueError, RecursionError) as exc:  # a 5000-digit number, nesting too deep
                raise JournalError(
                    f"{self.path}, line {lineno}: damaged record ({type(exc).__name__})"
                ) from None
            if (
                not isinstance(rec, dict)
                or rec.get("k") != len(self._records)
                or isinstance(rec.get("k"), bool)
            ):
                got = rec.get("k") if isinstance(rec, dict) else rec
                raise JournalError(
                    f"{self.path}, line {lineno}: field 'k' should be call {len(self._records)}, "
                    f"got {str(got)[:60]}"
                )
            problem = _record_problem(rec)
            if problem:
                field, message = problem
                raise JournalError(f"{self.path}, line {lineno}, field '{field}': {message}")
            self._records.append(rec)
        if cut is not None:
            # the interruption cut the last record short: keep everything before it (the file
            # is only changed once it is known to be this run's journal)
            warnings.warn(
                f"{self.path}: line {len(lines) + 1} is incomplete (interrupted write); dropped",
                stacklevel=3,
            )
            with self.path.open("r+b") as fh:
                fh.truncate(cut)

    def __len__(self) -> int:
        return len(self._records)

    def has(self, k: int) -> bool:
        return k < len(self._records)

    def replay(
        self, k: int, t: float, queue: dict[int, Job], jobs: tuple[Job, ...]
    ) -> tuple[Decision, float]:
        """Call ``k``'s recorded decision, checked against the state reached (time ``t``, ``queue``)."""
        rec = self._records[k]
        where = f"{self.path}, line {k + 2}"
        if rec["t"] != t:
            raise JournalError(
                f"{where}: field 't' is {rec['t']}, the replay reached call {k} at t={t}; "
                "the run is not the one recorded"
            )
        head = _head(queue)
        if rec["queue"] != len(queue) or rec["head"] != head:
            raise JournalError(
                f"{where}: fields 'queue'/'head' are {rec['queue']}/{rec['head']}, the replay has "
                f"{len(queue)} queued jobs headed by {head} at t={t}"
            )
        starts = []
        for index, job_id, nodes, units in rec["starts"]:
            job = jobs[index] if 0 <= index < len(jobs) else None
            if job is None or job.id != job_id:
                raise JournalError(
                    f"{where}: field 'starts' names job {job_id} at index {index}, "
                    "which is not that workload's job"
                )
            starts.append(Start(job, Allocation(nodes, units)))
        info = dict(rec.get("info") or {})
        info["replayed"] = True
        self.replayed += 1
        return Decision(starts, rec.get("wakeup"), info), float(rec["elapsed"])

    # ---- writing ---------------------------------------------------------------------------
    def append(
        self, k: int, t: float, queue: dict[int, Job], decision: Decision, elapsed: float
    ) -> None:
        """Record call ``k`` (``queue``: the queue the dispatcher saw, before its starts)."""
        rec = {
            "k": k,
            "t": t,
            "queue": len(queue),
            "head": _head(queue),
            "starts": [
                [s.job.index, s.job.id, s.allocation.nodes.tolist(), s.allocation.units.tolist()]
                for s in decision.starts
            ],
            "wakeup": decision.wakeup,
            "elapsed": elapsed,
            "info": decision.info,
        }
        self._fh.write(json.dumps(rec, default=json_default) + "\n")
        self._fh.flush()
        self._records.append({})  # its content is only needed on a later resume
        self.recorded += 1

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
        self._release()

    def _release(self) -> None:
        if self._lock is not None and not self._lock.closed:
            self._lock.close()  # closing the descriptor releases the lock

    def summary(self) -> JournalUse:
        return JournalUse(path=str(self.path), replayed=self.replayed, recorded=self.recorded)
