"""Acceptance of the static deadline strategies per load and seed (docs/DEADLINE.md, "Measured").

    PYTHONPATH=src python3 benchmarks/deadline_calibrate.py --dispatchers count-only,hilbert,manhattan --seeds 1,2,3,4,5

Each run: 1,000 generated jobs (``synthetic:deadline,load=L,seed=S``) on ``hlrn2-grid`` through
the Python engine, validated; prints accepted jobs per seed, their mean, rejections by stage,
cancellations, the mean normalised compactness (metrics/deadline.py), the jobs that passed
line 0 (the count; accepted + rejected at the shape stage), the span to the latest deadline
and whether every run validated. ``--extra ,cores=128`` adds generator keys (sensitivity runs).
The design note's calibration bar: count-only
at normal load accepts 410-610 (paper 510), falling from normal to heavy to very heavy.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np

from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.metrics.deadline import compactness
from hpcdispatch.sim import SimulationOptions, Simulator
from hpcdispatch.system.io import load_system
from hpcdispatch.validation import validate_result
from hpcdispatch.workload.loader import load_workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dispatchers", default="count-only,hilbert,manhattan")
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--loads", default="normal,heavy,very-heavy")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument(
        "--extra", default="", help="more generator keys, e.g. ',cores=128' (a sensitivity run)"
    )
    args = parser.parse_args()
    system = load_system("hlrn2-grid")
    seeds = [int(s) for s in args.seeds.split(",")]
    for load in args.loads.split(","):
        for name in args.dispatchers.split(","):
            accepted, reasons, cancelled, valid, norms, line0, spans = (
                [],
                Counter(),
                0,
                True,
                [],
                [],
                [],
            )
            began = time.perf_counter()
            for seed in seeds:
                workload = load_workload(
                    f"synthetic:deadline,jobs={args.jobs},load={load},seed={seed}{args.extra}",
                    system,
                )
                result = Simulator(
                    system,
                    workload,
                    make_dispatcher(name),
                    None,
                    SimulationOptions(engine="python"),
                ).run()
                accepted.append(int((result.status != 4).sum()))
                cancelled += int((result.status == 5).sum())
                why = Counter(r.split(":")[0] for r in result.reject_reason.values())
                reasons.update(why)
                line0.append(
                    accepted[-1] + why.get("shape", 0)
                )  # passed line 0 (the count) in this run
                deadlines = np.array([j.deadline for j in workload.jobs], dtype=float)
                spans.append((deadlines.max() - workload.submit.min()) / 86400)
                valid &= validate_result(result).ok
                norms.append(compactness(result)[1])
            print(
                f"{load:10s} {name:22s} accepted {accepted} mean {np.mean(accepted):.0f}  rejected by stage "
                f"{dict(sorted(reasons.items()))}  cancelled {cancelled}  compactness_norm {np.nanmean(norms):.3f}  "
                f"passed line 0 {line0} mean {np.mean(line0):.0f}  max-deadline span "
                f"{np.mean(spans):.1f} d  valid {valid}  "
                f"{time.perf_counter() - began:.1f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
