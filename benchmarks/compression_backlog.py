"""Conservative backfilling's compression on a large backlog: RICC (one unit per processor,
pooled profile) simulated up to a time ``--at`` (default 10.65 M s, where its queue holds
about 11,400 reservations over some 26,000 profile segments), then the next ``--calls``
compressions timed one by one.

    python benchmarks/compression_backlog.py                     # about 5 minutes on 006dd1e
    python benchmarks/compression_backlog.py --at 10650000 --calls 200

Prints the queue length, profile segments, reservations moved and time per compression
(mean, median, max), and a digest of the reservations' starts after each compression: run it
on two commits to compare kernels (the digests must be equal). The first compression after
``--at`` pays for loading the compiled kernels and is left out.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

import hpcdispatch.planning.profile as profile_module
from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.sim import SimulationOptions, Simulator
from hpcdispatch.workload import SwfOptions, UnitMapping, load_workload, resolve_system

RICC = Path(__file__).resolve().parents[2] / "shared" / "traces" / "RICC-2010-2.swf.gz"


class _Done(Exception):
    pass


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--ricc", type=Path, default=RICC)
    ap.add_argument(
        "--at", type=float, default=10_650_000.0, help="simulated time to start timing at (s)"
    )
    ap.add_argument("--calls", type=int, default=100, help="compressions to time")
    args = ap.parse_args()
    console = Console()
    system = resolve_system("auto", str(args.ricc))
    workload = load_workload(
        str(args.ricc), system, SwfOptions(units=UnitMapping(mode="processor"))
    )
    original = profile_module.AvailabilityProfile.compress
    times: list[float] = []
    sizes: list[tuple[int, int, int]] = []
    digest = hashlib.sha256()

    def timed_compress(self, q_start, q_end, *rest, **kw):
        if self._times[self.lo] < args.at:  # the profile starts at the simulated now
            return original(self, q_start, q_end, *rest, **kw)
        before = q_start.copy()
        segments = self.hi - self.lo
        t0 = time.perf_counter()
        result = original(self, q_start, q_end, *rest, **kw)
        elapsed = time.perf_counter() - t0
        times.append(elapsed)
        sizes.append((len(q_start), segments, int((q_start < before).sum())))
        digest.update(q_start.tobytes())
        if len(times) > args.calls:
            raise _Done
        return result

    profile_module.AvailabilityProfile.compress = timed_compress
    simulator = Simulator(
        system,
        workload,
        make_dispatcher("conservative"),
        options=SimulationOptions(record_decisions=False),
    )
    t_start = time.perf_counter()
    with console.status(f"simulating RICC (pooled conservative) up to t = {args.at:,.0f} s ..."):
        try:
            simulator.run()
        except _Done:
            pass
    wall = time.perf_counter() - t_start
    if len(times) < 2:
        console.print(
            f"[red]the run ended before {args.calls} compressions after t = {args.at:,.0f} s[/red]"
        )
        raise SystemExit(1)
    timed, shapes = times[1:], sizes[1:]
    table = Table(
        title=f"RICC pooled conservative: {len(timed)} compressions from t = {args.at:,.0f} s"
    )
    for col in (
        "queue (mean)",
        "segments (mean)",
        "moved (mean)",
        "mean ms",
        "median ms",
        "max ms",
        "digest",
    ):
        table.add_column(col, justify="right")
    table.add_row(
        f"{statistics.fmean(s[0] for s in shapes):,.0f}",
        f"{statistics.fmean(s[1] for s in shapes):,.0f}",
        f"{statistics.fmean(s[2] for s in shapes):,.0f}",
        f"{1000 * statistics.fmean(timed):.1f}",
        f"{1000 * statistics.median(timed):.1f}",
        f"{1000 * max(timed):.1f}",
        digest.hexdigest()[:16],
    )
    console.print(table)
    console.print(f"whole script {wall:.0f} s (simulation up to the timed part included)")


if __name__ == "__main__":
    main()
