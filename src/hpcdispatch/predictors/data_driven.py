"""D: the data-driven heuristic of Galleguillos et al. (MOD 2017), as used by CP'19 and PCP'20.

The knowledge base holds, per user, the profiles of the user's *completed* jobs: name, queue,
wall-time, resource request (units and per-unit request) and the real run time. A new job's
duration is the run time of the matching past job found by the first rule that matches:

1. identical profile (name, queue, wall-time, request);
2. a name sharing the longest prefix with the job's name (e.g. ``job1``, ``job2``), the rest
   of the profile identical;
3. identical name, same queue and wall-time, the request may differ: the most similar request
   wins (distance: sum over resources of |a - b| / max(a, b) of the total requests);
4. as rule 3 with the longest name prefix instead of the identical name;
5. the user's last job with the same name;
6. the user's last job whose name shares the longest prefix;

else the job's wall-time. The result is always capped by the wall-time (and at least 1 s).
When several past jobs match a rule equally well, the most recent (by completion) wins.
Prefix rules need a common prefix of at least one character.

Names: the job's ``name`` when the trace has one; SWF traces have no names, so the
executable number (field 14) is used as the name, as its decimal string -- prefix rules then
compare digit strings, which is what the heuristic does with numbered names. A job without
either has no name: only rule 1 (identical profile, name absent on both sides) can match it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from hpcdispatch.protocol.predictor import Predictor
from hpcdispatch.workload.job import Job, Workload

Request = tuple[int, tuple[int, ...]]  # (units, per-unit request)
_HIGH = "\U0010ffff"


def job_name(job: Job) -> str | None:
    if job.name:
        return job.name
    if job.executable is not None and job.executable >= 0:
        return str(job.executable)
    return None


def request_of(job: Job) -> Request:
    return (job.units, job.unit_request)


def request_distance(a: Request, b: Request) -> float:
    ta = [a[0] * x for x in a[1]]
    tb = [b[0] * x for x in b[1]]
    return sum(abs(x - y) / max(x, y, 1) for x, y in zip(ta, tb))


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class _Seen:
    """The latest completion of something: completion order and run time."""

    order: int
    run: float


@dataclass
class _NameIndex:
    """Distinct names in sorted order, each with a payload, for longest-prefix queries."""

    names: list[str] = field(default_factory=list)
    payload: dict[str, object] = field(default_factory=dict)

    def get_or_add(self, name: str, make) -> object:
        p = self.payload.get(name)
        if p is None:
            p = self.payload[name] = make()
            bisect.insort(self.names, name)
        return p

    def longest_prefix(self, name: str) -> list[str]:
        """The names sharing the longest (>= 1 character) common prefix with ``name``."""
        names = self.names
        if not names:
            return []
        pos = bisect.bisect_left(names, name)
        best = 0
        if pos < len(names):
            best = common_prefix(name, names[pos])
        if pos > 0:
            best = max(best, common_prefix(name, names[pos - 1]))
        if best == 0:
            return []
        prefix = name[:best]
        lo = bisect.bisect_left(names, prefix)
        hi = bisect.bisect_right(names, prefix + _HIGH)
        return names[lo:hi]


class _UserHistory:
    def __init__(self) -> None:
        self.by_profile: dict[tuple, _Seen] = {}  # rule 1: (name, queue, wall, request)
        self.by_qwr: dict[
            tuple, _NameIndex
        ] = {}  # rule 2: (queue, wall, request) -> names -> _Seen
        self.by_nqw: dict[
            tuple, dict[Request, _Seen]
        ] = {}  # rule 3: (name, queue, wall) -> request -> _Seen
        self.by_qw: dict[
            tuple, _NameIndex
        ] = {}  # rule 4: (queue, wall) -> names -> {request: _Seen}
        self.by_name: dict[str, _Seen] = {}  # rule 5
        self.names = _NameIndex()  # rule 6: names -> _Seen


def _latest(seen: list[_Seen]) -> _Seen | None:
    return max(seen, key=lambda s: s.order) if seen else None


def _most_similar(entries: dict[Request, _Seen], req: Request) -> _Seen | None:
    best_key = None
    best = None
    for r, seen in entries.items():
        key = (request_distance(r, req), -seen.order)
        if best_key is None or key < best_key:
            best_key, best = key, seen
    return best


class DataDrivenPredictor(Predictor):
    """D: the run time of the best-matching completed job of the same user (Galleguillos et
    al.; the matching rules are in the module)."""

    name = "data-driven"
    short = "D"
    aliases = ("datadriven", "heuristic")

    def reset(self, workload: Workload, walltime_kill: bool = True) -> None:
        super().reset(workload, walltime_kill)
        self._users: dict[int, _UserHistory] = {}
        self._order = 0
        #: which rule matched, per rule number (0 = none: wall-time) -- for reports and tests
        self.rule_counts = [0] * 7

    def match(self, job: Job) -> tuple[int, float | None]:
        """``(rule number, past run time)`` of the first matching rule, ``(0, None)`` if none."""
        hist = self._users.get(job.user)
        if hist is None:
            return 0, None
        name = job_name(job)
        req = request_of(job)
        q, w = job.queue, job.wall_time
        seen = hist.by_profile.get((name, q, w, req))
        if seen is not None:
            return 1, seen.run
        if name is None:
            return 0, None
        index = hist.by_qwr.get((q, w, req))
        if index is not None:
            cands = [index.payload[n] for n in index.longest_prefix(name)]
            best = _latest(cands)  # type: ignore[arg-type]
            if best is not None:
                return 2, best.run
        entries = hist.by_nqw.get((name, q, w))
        if entries:
            best = _most_similar(entries, req)
            if best is not None:
                return 3, best.run
        index = hist.by_qw.get((q, w))
        if index is not None:
            merged: list[tuple[float, int, float]] = []
            for n in index.longest_prefix(name):
                for r, s in index.payload[n].items():  # type: ignore[union-attr]
                    merged.append((request_distance(r, req), -s.order, s.run))
            if merged:
                return 4, min(merged)[2]
        seen = hist.by_name.get(name)
        if seen is not None:
            return 5, seen.run
        cands = [hist.names.payload[n] for n in hist.names.longest_prefix(name)]
        best = _latest(cands)  # type: ignore[arg-type]
        if best is not None:
            return 6, best.run
        return 0, None

    def predict(self, job: Job, now: float) -> float:
        rule, run = self.match(job)
        self.rule_counts[rule] += 1
        if run is None:
            return float(job.wall_time)
        return max(1.0, min(float(job.wall_time), run))

    def learn(self, job: Job, run_time: float, now: float) -> None:
        self._order += 1
        seen = _Seen(self._order, float(run_time))
        hist = self._users.get(job.user)
        if hist is None:
            hist = self._users[job.user] = _UserHistory()
        name = job_name(job)
        req = request_of(job)
        q, w = job.queue, job.wall_time
        hist.by_profile[(name, q, w, req)] = seen
        if name is None:
            return
        index = hist.by_qwr.get((q, w, req))
        if index is None:
            index = hist.by_qwr[(q, w, req)] = _NameIndex()
        index.get_or_add(name, lambda: seen)
        index.payload[name] = seen
        hist.by_nqw.setdefault((name, q, w), {})[req] = seen
        index = hist.by_qw.get((q, w))
        if index is None:
            index = hist.by_qw[(q, w)] = _NameIndex()
        entries = index.get_or_add(name, dict)
        entries[req] = seen  # type: ignore[index]
        hist.by_name[name] = seen
        hist.names.get_or_add(name, lambda: seen)
        hist.names.payload[name] = seen
