"""Where a ``hpcdispatch simulate`` run's memory goes: an RSS timeline by phase.

Runs the command in this process (the arguments after ``--`` are ``simulate``'s), a thread
reading ``VmRSS`` from ``/proc/self/status`` every few milliseconds, and marks the phases by
wrapping the functions that do them: reading the inputs, simulating (with the engine's
imports; inside it the compiled engine's hand-off: segment log, decision log, result), the
allocation rows, validating, the summary, writing the tables (and each table). Prints per
phase its span and the RSS at its start, its end and its peak, then the process's peak (as
``/usr/bin/time``'s ``%M``; a little below it: the interpreter's start and exit are not in
it)::

    python benchmarks/memory_timeline.py -- -w ../../shared/traces/HPC2N-2002-2.2-cln.swf.gz \\
        -s hpc2n -d easy --allocator first-fit --no-walltime-kill --units processor \\
        -o /tmp/mem/h_easy --force -q

``--tracemalloc`` also lists, for the validation and the writing, the lines whose live Python
and numpy allocations grew most from the phase's start to its highest traced level (Arrow's
own buffers are not traced). It slows the run and raises its RSS: read the RSS table of a run without it.
Phases on the second thread (validation and summary beside the writing) overlap the writing;
their peaks are the process's RSS during their span.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import resource
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

MB = 1024 * 1024


def rss_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Timeline:
    """RSS samples and phase spans, from a sampler thread."""

    def __init__(self, every: float, traced_phases: set[str]) -> None:
        self.t0 = time.perf_counter()
        self.every = every
        self.samples: list[tuple[float, int]] = []
        self.phases: list[list[Any]] = []  # [name, start, end, rss at start, rss at end]
        self.traced_phases = traced_phases
        self.open: dict[str, int] = {}  # phases under way -> their index in self.phases
        self.snapshots: dict[str, tuple[int, tracemalloc.Snapshot]] = {}
        self.baselines: dict[str, tuple[int, tracemalloc.Snapshot]] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def _sample(self) -> None:
        while not self.stop.is_set():
            self.samples.append((self.now(), rss_bytes()))
            if tracemalloc.is_tracing():
                self._maybe_snapshot()
            time.sleep(self.every)

    def _maybe_snapshot(self) -> None:
        level = tracemalloc.get_traced_memory()[0]
        for name in list(self.open):
            if name not in self.traced_phases:
                continue
            best = self.snapshots.get(name)
            if best is None or level > best[0] + 10 * MB:
                self.snapshots[name] = (level, tracemalloc.take_snapshot())

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if tracemalloc.is_tracing() and name in self.traced_phases:
            self.baselines[name] = (tracemalloc.get_traced_memory()[0], tracemalloc.take_snapshot())
        entry: list[Any] = [name, self.now(), None, rss_bytes(), None]
        self.phases.append(entry)
        self.open[name] = len(self.phases) - 1
        try:
            yield
        finally:
            if tracemalloc.is_tracing() and name in self.traced_phases:
                self._maybe_snapshot()
            self.open.pop(name, None)
            entry[2] = self.now()
            entry[4] = rss_bytes()

    def wrap(self, owner: Any, attribute: str, name: str) -> None:
        original: Callable[..., Any] = getattr(owner, attribute)

        @functools.wraps(original)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self.phase(name):
                return original(*args, **kwargs)

        setattr(owner, attribute, wrapped)

    def peak(self, start: float, end: float) -> int:
        return max((r for t, r in self.samples if start <= t <= end), default=0)

    def report(self) -> str:
        lines = [
            f"{'phase':<14} {'start s':>8} {'end s':>8} {'RSS in MB':>10} {'RSS out MB':>11}"
            f" {'peak MB':>8}"
        ]
        for name, start, end, rss_in, rss_out in self.phases:
            end = self.now() if end is None else end
            peak = max(self.peak(start, end), rss_in, rss_out or 0)
            lines.append(
                f"{name:<14} {start:8.2f} {end:8.2f} {rss_in / MB:10.0f} "
                f"{(rss_out or 0) / MB:11.0f} {peak / MB:8.0f}"
            )
        top = max((r for _, r in self.samples), default=0)
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        lines.append(
            f"whole run {self.now():.2f} s; sampled peak {top / MB:.0f} MB; "
            f"peak RSS (ru_maxrss, as /usr/bin/time %M) {maxrss:.0f} MB"
        )
        for name, (level, snapshot) in self.snapshots.items():
            base_level, base = self.baselines[name]
            lines.append(
                f"\n{name}: traced {base_level / MB:.0f} MB at its start, {level / MB:.0f} MB at "
                "its highest; the biggest growths by line:"
            )
            for stat in snapshot.compare_to(base, "lineno")[:14]:
                frame = stat.traceback[0]
                lines.append(
                    f"  {stat.size_diff / MB:+7.1f} MB {stat.count_diff:>+8} blocks  "
                    f"{frame.filename.split('/src/')[-1]}:{frame.lineno}"
                )
        return "\n".join(lines)


def instrument(timeline: Timeline) -> None:
    """Wrap the functions that do each phase (imported here: the imports are not measured)."""
    import hpcdispatch.cli.main as cli_main
    import hpcdispatch.results.store as store
    import hpcdispatch.runner as runner
    from hpcdispatch.sim.result import SimulationResult
    from hpcdispatch.sim.segments import SegmentLog
    from hpcdispatch.sim.state import DecisionLog, LoopState

    timeline.wrap(cli_main, "load_inputs", "read")
    timeline.wrap(runner, "simulate", "simulate")
    timeline.wrap(runner, "validate_result", "validate")
    timeline.wrap(store, "summarize", "summary")
    timeline.wrap(store, "_write_tables", "write")
    timeline.wrap(store, "write_frame", "write table")
    timeline.wrap(SimulationResult, "allocation_rows", "alloc rows")
    # the compiled engine's hand-off to the result (after its loop)
    timeline.wrap(SegmentLog, "from_arrays", "segment log")
    timeline.wrap(DecisionLog, "from_columns", "decision log")
    timeline.wrap(LoopState, "result", "result")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--every", type=float, default=0.005, help="sampling period [s]")
    parser.add_argument("--tracemalloc", action="store_true", help="top allocations, see above")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="-- simulate's arguments")
    ns = parser.parse_args()
    args = ns.args[1:] if ns.args[:1] == ["--"] else ns.args
    timeline = Timeline(ns.every, {"validate", "write"} if ns.tracemalloc else set())
    timeline.thread.start()
    with timeline.phase("imports"):
        # what the command's main() sets before pyarrow is imported (instrument() imports it)
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
        import hpcdispatch.cli.main as cli_main

        instrument(timeline)
    if ns.tracemalloc:
        tracemalloc.start(1)
    code = 0
    try:
        with timeline.phase("command"):
            cli_main.main(["simulate", *args])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    timeline.stop.set()
    timeline.thread.join()
    print(timeline.report(), file=sys.stderr)
    sys.exit(code)


if __name__ == "__main__":
    main()
