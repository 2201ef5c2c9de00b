"""Do deadline-aware queue options rescue the leaks' on-time findings? (issue 34, F4, F6, F9)

    PYTHONPATH=src python3 benchmarks/deadline_leak_options.py SWEEP_DIR OPTIONS_DIR

``SWEEP_DIR``: ``sweep run benchmarks/deadline_sweep.toml`` (the static strategies and the
paper's FIFO leaks); ``OPTIONS_DIR``: ``sweep run benchmarks/deadline_leak_options.toml`` (the
leaks with ``order=edf`` and/or ``skip_hopeless``), on the same workloads and seeds. For every
variant it re-reads F4, F6 and F9 of ``deadline_findings.py`` with the variant in the place of
the paper's leak of its kind (``leak-nc-edf`` for ``leak-nc``, ``leak-edf`` for ``leak``), and
prints the on-time and cancel-share means per type at normal load beside the paper's leaks and
the better static strategy. The paper's leaks are deadline-unaware (FIFO, A28); these are not
the paper's strategies, so they never change a verdict of deadline_findings.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deadline_findings import STATIC, f4_leak_nc_on_time, f6_leak_nc_cancel, f9_uniform_on_time, read_sweep  # noqa: E402


def _stand_in(frame: pd.DataFrame, variant: str) -> pd.DataFrame:
    """``frame`` with ``variant``'s cells in the place of the paper's leak of its kind."""
    kind = "leak-nc" if variant.startswith("leak-nc") else "leak"
    rest = frame[(frame["strategy"] != kind) & (frame["strategy"] != variant)]
    mine = frame[frame["strategy"] == variant].assign(strategy=kind)
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
    print(f"{args.sweep_dir}: {len(base)} cells, {int(base['valid'].sum())} valid; "
          f"{args.options_dir}: {len(options)} cells, {int(options['valid'].sum())} valid")

    normal = frame[frame["load"] == "normal"]
    rows = []
    for mix in ("0", "1", "2", "3", "uniform"):
        for comm in ("async", "sync"):
            cells = normal[(normal["mix"] == mix) & (normal["comm"] == comm)]
            means = cells.groupby("strategy")[["on_time", "cancel_rate"]].mean()
            best = max(STATIC, key=lambda s: means.loc[s, "on_time"])
            row = {"mix": mix, "comm": comm, "best static": f"{best} {means.loc[best, 'on_time']:.0f}"}
            for s in ("leak", "leak-nc", *variants):
                row[s] = f"{means.loc[s, 'on_time']:.0f} ({means.loc[s, 'cancel_rate']:.2f})"
            rows.append(row)
    print("\nnormal load: jobs on time, mean of 5 seeds (cancel share in brackets)")
    print(pd.DataFrame(rows).to_string(index=False))

    for variant in variants:
        stood = _stand_in(frame, variant)
        print(f"\n== {variant} in the place of {'leak-nc' if variant.startswith('leak-nc') else 'leak'}")
        checks = (f4_leak_nc_on_time, f6_leak_nc_cancel, f9_uniform_on_time) if variant.startswith("leak-nc") else ()
        for check in checks:
            print(check(stood).render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
