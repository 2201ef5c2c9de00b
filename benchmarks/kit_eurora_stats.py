"""The archive-trace statistics behind synthetic:kit and synthetic:eurora (issue 36).

Prints, for each trace given (default: CEA Curie and SDSC Blue Horizon from ../shared/traces),
the share of short (< 1 h), medium (1-5 h) and long (> 5 h) jobs, the mean and standard
deviation of the log run time in each class, the job sizes by log2 class of processors, the
power-of-two share of parallel jobs, and (Curie) the sizes of the jobs of at most 16 cores.
The constants in src/hpcdispatch/workload/kit.py and eurora.py are these numbers, rounded.

    python3 benchmarks/kit_eurora_stats.py [TRACE.swf.gz ...]
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
DEFAULT = ("CEA-Curie-2011-2.1-cln.swf.gz", "SDSC-BLUE-2000-4.2-cln.swf.gz")


def load(path: Path) -> np.ndarray:
    rows = []
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith(";") or not line.strip():
                continue
            rows.append([float(x) for x in line.split()[:18]])
    return np.array(rows)


def report(path: Path) -> None:
    a = load(path)
    run = a[:, 3]
    procs = np.where(a[:, 7] > 0, a[:, 7], a[:, 4])
    ok = (run > 0) & (procs > 0)
    run, procs = run[ok], procs[ok]
    print(f"{path.name}: {len(run)} jobs with run time and size")
    s, m, long_ = run < 3600, (run >= 3600) & (run < 18000), run >= 18000
    print(
        f"  short {s.mean():.4f} medium {m.mean():.4f} long {long_.mean():.4f}; "
        f"long among > 1 h {long_.sum() / (m.sum() + long_.sum()):.3f}"
    )
    for name, mask in (("short", s), ("medium", m), ("long", long_)):
        lr = np.log(run[mask])
        print(f"  {name}: log run time mean {lr.mean():.2f} sd {lr.std():.2f}")
    edges = [2.0**k for k in range(15)] + [1e12]
    share = np.histogram(procs, bins=edges)[0] / len(procs)
    print(
        "  processors by log2 class: "
        + " ".join(f"{int(edges[k])}+:{share[k]:.3f}" for k in range(len(share)) if share[k] > 0)
    )
    p = procs.astype(np.int64)
    par = p > 1
    print(f"  power of two among parallel jobs {((p & (p - 1)) == 0)[par].mean():.3f}")
    small = procs[procs <= 16]
    if len(small):
        bins = [1, 2, 4, 8, 16, 17]
        h = np.histogram(small, bins=bins)[0] / len(small)
        print(
            "  jobs of <= 16 processors: "
            + " ".join(f"{bins[k]}+:{h[k]:.3f}" for k in range(len(h)))
        )


if __name__ == "__main__":
    names = sys.argv[1:] or [str(TRACES / n) for n in DEFAULT]
    for name in names:
        report(Path(name))
