"""Do deadline-aware queue options rescue the leaks' on-time findings? (issue 34, F4, F6, F9)

    PYTHONPATH=src python3 benchmarks/deadline_leak_options.py SWEEP_DIR OPTIONS_DIR

``SWEEP_DIR``: ``sweep run benchmarks/deadline_sweep.toml`` (the static strategies and the
paper's FIFO leaks); ``OPTIONS_DIR``: ``sweep run benchmarks/deadline_leak_options.toml`` (the
leaks with ``order=edf`` and/or ``skip_hopeless``), on the same workloads and seeds. It prints
the jobs on time per load, type mix and pattern (mean of the seeds) for the static
strategies, the paper's leaks and every variant; then, for every variant (and the paper's
contiguous ``leak``), F4, F6 and F9 of ``deadline_findings.py`` read with it in the place of
``leak-nc``, the strategy those findings name. The paper's leaks are deadline-unaware (FIFO, A28); these are not
the paper's strategies, so they never change a verdict of deadline_findings.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deadline_findings import f4_leak_nc_on_time, f6_leak_nc_cancel, f9_uniform_on_time, read_sweep  # noqa: E402


def _stand_in(frame: pd.DataFrame, variant: str) -> pd.DataFrame:
    """``frame`` with ``variant``'s cells in the place of ``leak-nc`` (the strategy F4, F6 and
    F9 name), so that each check reads the variant against the static strategies."""
    rest = frame[(frame["strategy"] != "leak-nc") & (frame["strategy"] != variant)]
    mine = frame[frame["strategy"] == variant].assign(strategy="leak-nc")
    return pd.concat([rest, mine], ignore_index=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dir", type=Path)
    parser.add_argument("options_dir", type=Path)
    args = parser.parse_args(argv)
    base = read_sweep(args.sweep_dir)
    options = read_sweep(args.options_dir)
    frame = pd.concat([base, options], ignore_index=True)
    variants = sorted(set(options["strategy"]))
    stand_ins = ["leak", *variants]
    print(
        f"{args.sweep_dir}: {len(base)} cells, {int(base['valid'].sum())} valid; "
        f"{args.options_dir}: {len(options)} cells, {int(options['valid'].sum())} valid"
    )

    order = ["hilbert", "manhattan", "leak", "leak-nc", *variants]
    order = sorted(order, key=lambda s: (s.startswith("leak"), s.startswith("leak-nc"), len(s)))
    for comm in ("async", "sync"):
        cells = frame[frame["comm"] == comm]
        table = cells.groupby(["load", "mix", "strategy"])["on_time"].mean().unstack()[order]
        table = table.reindex(["normal", "heavy", "very-heavy"], level=0).round(0).astype(int)
        print(f"\njobs on time, {comm}, mean of the seeds")
        print(table.to_string())

    for variant in stand_ins:
        stood = _stand_in(frame, variant)
        print(f"\n== {variant} in the place of leak-nc")
        for check in (f4_leak_nc_on_time, f6_leak_nc_cancel, f9_uniform_on_time):
            print(check(stood).render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
