"""The reading map of issue 48: which reading of the deadline paper reproduces which finding.

    PYTHONPATH=src python3 benchmarks/deadline_map.py MAP [MAP-distance [MAP-max]]

``MAP`` is the output of ``hpcdispatch sweep run benchmarks/deadline_map.toml`` (every
strategy and reading under the default network cost ``mean``); the optional others are the
outputs of ``deadline_map_distance.toml`` / ``deadline_map_max.toml`` (leak-nc and the static
strategies under another network cost). Only their ``summary.parquet`` is read; cells not done
yet are left out, and every line says over how many seeds it is.

A **reading** is a strategy label plus the network cost: ``leak-nc`` (admission free-node,
the default) / ``leak-nc-queue`` / ``leak-nc-overbook``, ``manhattan`` (growth strict) /
``manhattan-bend``, each "@mean", "@distance" or "@max". A finding compares readings under
the same network cost. Per finding and reading it prints the verdict (yes / no), the medians
over seeds and, where the paper compares strategies, per-seed win counts ("7/10": the seeds in
which the reading wins). Then the gated bars (C1, F10, C2b, C2) with MET / NOT MET.

The findings (design note §1.5, §4; docs/RESULTS-DEADLINE.md):

- C1 count-only (line 0) accepts 510 / 400 / 260 at normal / heavy / very heavy; gate: normal
  mean of seeds 1-10 in [410, 610], normal > heavy > very heavy;
- C2 the leaks accept >= 95 % (gate: overbook at every load); C2b no leak job cancelled
  while waiting (gate: free-node and overbook);
- C3 simulated spans about 74 / 65 / 65 days;
- F1 both leaks accept more than both static strategies, every load and mix;
- F2 static acceptance falls with load;
- F3 Manhattan accepts slightly more than Hilbert at normal load, about half at very heavy;
- F4 types 2, 3, normal: leak-nc completes more jobs on time than both static strategies;
- F5 (type 1) and F12 (sync against async) are outside the map (types 2, 3, uniform, async);
- F6 types 2, 3, normal: leak-nc cancels a smaller share than both static;
- F7 the leaks' cancel share rises with load (types 2, 3);
- F8 very heavy, types 2, 3: the contiguous leak cancels no more than leak-nc;
- F9 uniform mix: leak-nc on time >= both static at every load;
- F10 Manhattan partitions more compact than Hilbert's (gate: every load, defaults);
- F11 Manhattan fragments the free space more at heavy and very heavy load.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deadline_findings import read_sweep  # noqa: E402  (the sibling script's reader)

LOADS = ("normal", "heavy", "very-heavy")
MIXES = ("2", "3", "uniform")
PAPER_C1 = {"normal": 510, "heavy": 400, "very-heavy": 260}
NETWORK_OF = {0: "mean", 1: "distance", 2: "max"}


def load_map(dirs: list[Path]) -> pd.DataFrame:
    frames = []
    for k, d in enumerate(dirs):
        f = read_sweep(d)
        f["network"] = NETWORK_OF[k]
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


def cells(frame: pd.DataFrame, strategy: str, network: str = "mean", **where: str) -> pd.DataFrame:
    m = (frame["strategy"] == strategy) & (frame["network"] == network)
    for col, val in where.items():
        m &= frame[col] == val
    return frame[m]


def per_seed(frame: pd.DataFrame, strategy: str, network: str, metric: str, **where) -> pd.Series:
    sub = cells(frame, strategy, network, **where)
    return sub.groupby("seed")[metric].mean()


def wins(a: pd.Series, others: list[pd.Series], strict: bool = True) -> tuple[int, int]:
    """Seeds in which ``a`` beats every series of ``others`` (> or >=), of the common seeds."""
    common = a.index
    for o in others:
        common = common.intersection(o.index)
    if len(common) == 0:
        return 0, 0
    best = np.max([o.loc[common].to_numpy() for o in others], axis=0)
    mine = a.loc[common].to_numpy()
    won = mine > best if strict else mine >= best
    return int(won.sum()), len(common)


def med(s: pd.Series, digits: int = 0) -> str:
    return "-" if len(s) == 0 else f"{np.median(s.to_numpy()):.{digits}f}"


def readings(frame: pd.DataFrame, family: str) -> list[tuple[str, str]]:
    """(strategy, network) pairs present whose label is ``family`` or a reading of it."""
    out = []
    for (s, n), _ in frame.groupby(["strategy", "network"], sort=False):
        if s == family or s.startswith(family + "-"):
            if family == "leak" and s.startswith("leak-nc"):
                continue
            out.append((s, n))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", type=Path)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=RuntimeWarning)  # (means of cells not done yet)
    frame = load_map(args.dirs)
    say = print
    say(
        f"cells done: {len(frame)} ({', '.join(f'{n}: {c}' for n, c in frame.groupby('network').size().items())})"
    )
    gates: list[tuple[str, bool, str]] = []

    # ---- C1 ------------------------------------------------------------------------------
    say("\n## C1 count-only (line 0), accepted; paper 510 / 400 / 260")
    means = {}
    for load in LOADS:
        s = per_seed(frame, "count-only", "mean", "accepted", load=load)
        means[load] = float(s.mean()) if len(s) else float("nan")
        say(
            f"  {load:10s} mean {means[load]:.1f} median {med(s)} over {len(s)} seeds; "
            f"per seed {s.round().astype(int).tolist()}  (paper {PAPER_C1[load]})"
        )
    c1 = 410 <= means["normal"] <= 610 and means["normal"] > means["heavy"] > means["very-heavy"]
    gates.append(
        ("C1", c1, f"{means['normal']:.1f} / {means['heavy']:.1f} / {means['very-heavy']:.1f}")
    )

    # ---- F10, F11 ------------------------------------------------------------------------
    say("\n## F10 compactness_norm (mean over mixes and seeds); F11 free_fragmentation")
    f10 = True
    for net in ("mean", "distance", "max"):
        for load in LOADS:
            h = cells(frame, "hilbert", net, load=load)
            if len(h) == 0:
                continue
            line = [f"hilbert {h['compactness_norm'].mean():.3f}"]
            for m in ("manhattan", "manhattan-bend"):
                mm = cells(frame, m, net, load=load)
                if len(mm):
                    hs = per_seed(frame, "hilbert", net, "compactness_norm", load=load)
                    ms = per_seed(frame, m, net, "compactness_norm", load=load)
                    w, n = wins(-ms, [-hs])
                    line.append(
                        f"{m} {mm['compactness_norm'].mean():.3f} (more compact in {w}/{n} seeds)"
                    )
                    if net == "mean" and m == "manhattan":
                        f10 &= mm["compactness_norm"].mean() < h["compactness_norm"].mean()
            frag = [
                f"{s} {cells(frame, s, net, load=load)['free_fragmentation'].mean():.3f}"
                for s in ("hilbert", "manhattan", "manhattan-bend")
                if len(cells(frame, s, net, load=load))
            ]
            say(
                f"  @{net:8s} {load:10s} "
                + "; ".join(line)
                + "  | fragmentation "
                + ", ".join(frag)
            )
    gates.append(("F10", f10, "manhattan < hilbert at every load (network mean)"))

    # ---- acceptance: C2, C2b, F1, F2, F3 --------------------------------------------------
    say("\n## acceptance (median over seeds; mixes pooled per seed), cancelled waiting")
    c2b = True
    c2 = True
    for fam in ("leak", "leak-nc"):
        for s, net in readings(frame, fam):
            parts = []
            for load in LOADS:
                acc = per_seed(frame, s, net, "accepted", load=load)
                sub = cells(frame, s, net, load=load)
                waiting = int(sub["cancelled_waiting"].sum()) if len(sub) else 0
                share = (sub["accepted"] / sub["submitted"]).min() if len(sub) else float("nan")
                parts.append(
                    f"{load} {med(acc)} (min share {share:.3f}, cancelled waiting {waiting})"
                )
                if s in ("leak", "leak-nc") or s.endswith("-overbook"):  # free-node, overbook
                    c2b &= waiting == 0
                if s.endswith("overbook"):
                    c2 &= bool(share >= 0.95)
            say(f"  {s}@{net}: " + "; ".join(parts))
    gates.append(("C2b", c2b, "no leak job cancelled waiting under free-node and overbook"))
    gates.append(("C2", c2, "overbook accepts >= 95 % in every cell"))
    for s in ("hilbert", "manhattan", "manhattan-bend", "count-only"):
        for net in ("mean", "distance", "max"):
            vals = [per_seed(frame, s, net, "accepted", load=load) for load in LOADS]
            if not len(vals[0]):
                continue
            falls = sum(int(a > b > c) for a, b, c in zip(*(v.to_numpy() for v in vals)))
            say(
                f"  {s}@{net}: "
                + " / ".join(med(v) for v in vals)
                + f"  (F2: falling in {falls}/{len(vals[0])} seeds)"
            )
    say(
        "\n## F1 both leaks (a reading each) accept more than both static, every load and mix; "
        "F3 manhattan / hilbert accepted"
    )
    for net in ("mean",):
        for ladm in ("", "-queue", "-overbook"):
            ok, worst = True, []
            for load in LOADS:
                for mix in MIXES:
                    lk = [
                        cells(frame, f"leak{ladm}", net, load=load, mix=mix)["accepted"].mean(),
                        cells(frame, f"leak-nc{ladm}", net, load=load, mix=mix)["accepted"].mean(),
                    ]
                    st = [
                        cells(frame, x, net, load=load, mix=mix)["accepted"].mean()
                        for x in ("hilbert", "manhattan")
                    ]
                    ok &= min(lk) > max(st)
                    worst.append(min(lk) - max(st))
            say(
                f"  leaks{ladm or '-free-node'}@{net}: {'yes' if ok else 'no'} "
                f"(least margin {np.nanmin(worst):.0f} jobs)"
            )
        for m in ("manhattan", "manhattan-bend"):
            r = []
            for load in LOADS:
                a = per_seed(frame, m, net, "accepted", load=load)
                b = per_seed(frame, "hilbert", net, "accepted", load=load)
                w, n = wins(a, [b])
                r.append(f"{load} {np.median((a / b).dropna()):.2f} ({w}/{n} seeds more)")
            say(f"  F3 {m}/hilbert@{net}: " + "; ".join(r))

    # ---- on time, cancel share: F4, F6, F7, F8, F9 ---------------------------------------
    say(
        "\n## F4 types 2, 3, normal: leak-nc on time > both static (same network); F9 uniform, every load"
    )
    for fam in ("leak-nc", "leak"):
        for s, net in readings(frame, fam):
            out = []
            for mix in ("2", "3"):
                mine = per_seed(frame, s, net, "on_time", load="normal", mix=mix)
                others = [
                    per_seed(frame, x, net, "on_time", load="normal", mix=mix)
                    for x in ("hilbert", "manhattan")
                ]
                if not len(mine) or not all(len(o) for o in others):
                    continue
                w, n = wins(mine, others)
                out.append(
                    f"type {mix}: {med(mine)} vs {med(others[0])} / {med(others[1])}, wins {w}/{n}"
                )
            u = []
            for load in LOADS:
                mine = per_seed(frame, s, net, "on_time", load=load, mix="uniform")
                others = [
                    per_seed(frame, x, net, "on_time", load=load, mix="uniform")
                    for x in ("hilbert", "manhattan")
                ]
                if not len(mine) or not all(len(o) for o in others):
                    continue
                w, n = wins(mine, others, strict=False)
                u.append(f"{load} {med(mine)} vs {med(others[0])}/{med(others[1])} ({w}/{n})")
            if out or u:
                say(f"  {s}@{net}: F4 " + "; ".join(out) + " | F9 " + "; ".join(u))
    say(
        "\n## F6 types 2, 3, normal: leak-nc cancel share < both static; F7 leaks' cancel share "
        "rises with load; F8 very heavy: leak <= leak-nc"
    )
    for fam in ("leak-nc", "leak"):
        for s, net in readings(frame, fam):
            f6 = []
            for mix in ("2", "3"):
                mine = per_seed(frame, s, net, "cancel_rate", load="normal", mix=mix)
                others = [
                    per_seed(frame, x, net, "cancel_rate", load="normal", mix=mix)
                    for x in ("hilbert", "manhattan")
                ]
                if len(mine) and all(len(o) for o in others):
                    w, n = wins(-mine, [-o for o in others])
                    f6.append(
                        f"type {mix} {med(mine, 3)} vs {med(others[0], 3)}/{med(others[1], 3)} ({w}/{n})"
                    )
            f7 = []
            for mix in ("2", "3"):
                v = [per_seed(frame, s, net, "cancel_rate", load=load, mix=mix) for load in LOADS]
                if all(len(x) for x in v):
                    rising = sum(int(a < b < c) for a, b, c in zip(*(x.to_numpy() for x in v)))
                    f7.append(
                        f"type {mix} "
                        + " / ".join(med(x, 3) for x in v)
                        + f" (rising {rising}/{len(v[0])})"
                    )
            say(f"  {s}@{net}: F6 " + "; ".join(f6) + " | F7 " + "; ".join(f7))
    for adm in ("", "-queue", "-overbook"):
        for net in ("mean",):
            r = []
            for mix in ("2", "3"):
                a = per_seed(frame, f"leak{adm}", net, "cancel_rate", load="very-heavy", mix=mix)
                b = per_seed(frame, f"leak-nc{adm}", net, "cancel_rate", load="very-heavy", mix=mix)
                if len(a) and len(b):
                    w, n = wins(b, [a], strict=False)
                    r.append(
                        f"type {mix} leak {med(a, 3)} vs leak-nc {med(b, 3)} (leak <= leak-nc in {w}/{n})"
                    )
            if r:
                say(f"  F8 leaks{adm or '-free-node'}@{net}: " + "; ".join(r))

    say("\n## C3 span_days (mean of cells)")
    for s in ("count-only", "hilbert", "manhattan", "leak", "leak-nc", "leak-overbook"):
        sub = cells(frame, s, "mean")
        if len(sub):
            say(
                f"  {s}: "
                + " / ".join(f"{sub[sub['load'] == x]['span_days'].mean():.1f}" for x in LOADS)
                + " d (paper 74 / 65 / 65)"
            )

    say("\n## gates")
    for key, ok, what in gates:
        say(f"  {key}: {'MET' if ok else 'NOT MET'} -- {what}")
    valid = frame["valid"].astype(bool).all() if "valid" in frame else None
    say(f"  every done cell valid: {valid} ({len(frame)} cells)")


if __name__ == "__main__":
    main()
