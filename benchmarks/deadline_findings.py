"""The deadline paper's findings (design note §1.5 / §4, issue 34's bars) read off a sweep.

    PYTHONPATH=src python3 benchmarks/deadline_findings.py SWEEP_DIR

``SWEEP_DIR`` is the output of ``hpcdispatch sweep run benchmarks/deadline_sweep.toml``; its
``summary.parquet`` (one row per cell) is all this reads. For every finding it prints the
numbers (per load, type mix, pattern: the mean over seeds +- its standard error; where a bar
counts seeds, the per-seed values) and a verdict: ``MET`` / ``NOT MET`` (gated bars marked
``[gate]``), ``--`` where the finding is only reported.

Readings (the design note's §4 where it gives one):

- C1: ``count-only`` mean accepted at normal load in [410, 610], and normal > heavy > very
  heavy; checked for every mix and pattern (with the execution model, overruns and early ends
  change later admissions, so the mixes differ).
- C2: ``leak`` and ``leak-nc`` accept >= 95 % of submitted jobs in every cell.
- F1: for every load, mix and pattern, both leaks' mean accepted > both static strategies'
  (``hilbert``, ``manhattan``).
- F2: for ``hilbert`` and ``manhattan``, every mix and pattern, mean accepted strictly falls
  normal > heavy > very heavy.
- F4: types 2 and 3 at normal load, async (Fig 17a): ``on_time(leak-nc) > max(on_time(hilbert),
  on_time(manhattan))`` in at least 4 of 5 seeds, per type (sync printed too).
- F10: mean ``compactness_norm`` of ``manhattan`` < ``hilbert`` at every load (``manhattan-all``,
  the MM-like centring, printed too).
- The others (F3, F5-F9, F11, F12, C3) as the design note words them; "type b" is the cells of
  mix ``b`` (every job that type).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

LOADS = ("normal", "heavy", "very-heavy")
MIXES = ("0", "1", "2", "3", "uniform")
COMMS = ("async", "sync")
STATIC = ("hilbert", "manhattan")
LEAKS = ("leak", "leak-nc")
FOUR = STATIC + LEAKS


@dataclass
class Finding:
    """One bar or finding: its verdict (None: reported, no verdict) and the lines that show why."""

    key: str
    title: str
    gated: bool
    met: bool | None = None
    lines: list[str] = field(default_factory=list)

    def render(self) -> str:
        verdict = "--" if self.met is None else ("MET" if self.met else "NOT MET")
        gate = " [gate]" if self.gated else ""
        head = f"{self.key}{gate}: {self.title} -> {verdict}"
        return "\n".join([head, *("    " + line for line in self.lines)])


def _spec_value(spec: str, key: str) -> str:
    for part in spec.split(","):
        name, _, value = part.partition("=")
        if name == key:
            return value
    raise ValueError(f"workload spec has no {key}=: {spec!r}")


def read_sweep(sweep_dir: Path) -> pd.DataFrame:
    """The sweep's summary with ``strategy``, ``load``, ``mix``, ``comm`` columns from each cell's spec."""
    path = Path(sweep_dir) / "summary.parquet"
    if not path.exists():
        raise SystemExit(f"{path}: no such file (is {sweep_dir} a sweep's output directory?)")
    frame = pd.read_parquet(path)
    frame = frame[frame["status"] == "done"].copy()
    frame["strategy"] = frame["run_label"].astype(str)
    for key, column in (("load", "load"), ("types", "mix"), ("comm", "comm")):
        frame[column] = frame["workload"].map(lambda spec, k=key: _spec_value(spec, k))
    frame["seed"] = frame["seed"].astype(int)
    return frame


def _mean_se(values: pd.Series) -> tuple[float, float]:
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    if arr.size == 0:
        return float("nan"), float("nan")
    se = float(arr.std(ddof=1) / np.sqrt(arr.size)) if arr.size > 1 else 0.0
    return float(arr.mean()), se


def _fmt(values: pd.Series, digits: int = 1) -> str:
    mean, se = _mean_se(values)
    return f"{mean:.{digits}f} +- {se:.{digits}f}"


def _accepted(frame, strategy, load):
    return _cells(frame, strategy=strategy, load=load)["accepted"].mean()


def _cells(frame: pd.DataFrame, **where: str) -> pd.DataFrame:
    mask = np.ones(len(frame), dtype=bool)
    for column, value in where.items():
        mask &= (frame[column] == value).to_numpy()
    return frame[mask]


def _per_seed(frame: pd.DataFrame, column: str, **where: str) -> pd.Series:
    """``column`` per seed for one cell group (one row per seed)."""
    return _cells(frame, **where).set_index("seed")[column].sort_index()


def _groups(frame: pd.DataFrame, column: str, by: list[str]) -> pd.Series:
    return frame.groupby(by)[column].mean()


def _present(frame: pd.DataFrame, column: str, values: tuple[str, ...]) -> tuple[str, ...]:
    have = set(frame[column])
    return tuple(v for v in values if v in have)


def _type_col(mix: str, metric: str) -> str:
    """The per-type column of a single-type mix (``type2_cancel_rate``); the run's own for uniform."""
    return f"type{mix}_{metric}" if mix.isdigit() else metric


def c1_count_only(frame: pd.DataFrame) -> Finding:
    f = Finding(
        "C1",
        "count-only accepts 410-610 of 1,000 at normal load, normal > heavy > very heavy "
        "(paper 510 / 400 / 260)",
        gated=True,
    )
    means = _groups(_cells(frame, strategy="count-only"), "accepted", ["mix", "comm", "load"])
    ok = True
    for mix in _present(frame, "mix", MIXES):
        for comm in _present(frame, "comm", COMMS):
            vals = [means.get((mix, comm, load), np.nan) for load in LOADS]
            band = 410 <= vals[0] <= 610
            falls = vals[0] > vals[1] > vals[2]
            ok &= band and falls
            per = _per_seed(
                frame, "accepted", strategy="count-only", mix=mix, comm=comm, load="normal"
            )
            f.lines.append(
                f"mix {mix:>7} {comm:5}: {vals[0]:.1f} / {vals[1]:.1f} / {vals[2]:.1f} "
                f"(band {'ok' if band else 'no'}, falls {'ok' if falls else 'no'}); "
                f"normal per seed {list(per.astype(int))}"
            )
    overall = [_fmt(_cells(frame, strategy="count-only", load=load)["accepted"]) for load in LOADS]
    f.lines.append("all cells: " + " / ".join(overall))
    f.met = bool(ok)
    return f


def c2_leaks_accept(frame: pd.DataFrame) -> Finding:
    f = Finding(
        "C2", "both leaks accept >= 95 % of submitted jobs at every load and mix", gated=True
    )
    ok = True
    for strategy in LEAKS:
        cells = _cells(frame, strategy=strategy)
        share = cells["accepted"] / cells["submitted"]
        ok &= bool((share >= 0.95).all()) and len(cells) > 0
        f.lines.append(f"{strategy}: lowest acceptance {share.min():.3f} over {len(cells)} cells")
    f.met = bool(ok)
    return f


def c3_spans(frame: pd.DataFrame) -> Finding:
    f = Finding(
        "C3", "simulated span about 74 / 65 / 65 days (normal / heavy / very heavy)", gated=False
    )
    for strategy in _present(frame, "strategy", ("count-only",) + FOUR):
        f.lines.append(
            f"{strategy:10} span_days "
            + " / ".join(
                _fmt(_cells(frame, strategy=strategy, load=load)["span_days"]) for load in LOADS
            )
        )
    return f


def f1_leaks_accept_more(frame: pd.DataFrame) -> Finding:
    f = Finding(
        "F1",
        "both leaks accept more than both static strategies at every load and mix (Fig 14)",
        gated=True,
    )
    means = _groups(frame, "accepted", ["strategy", "load", "mix", "comm"])
    ok = True
    worst = None
    for load in LOADS:
        for mix in _present(frame, "mix", MIXES):
            for comm in _present(frame, "comm", COMMS):
                leak = min(means.get((s, load, mix, comm), np.nan) for s in LEAKS)
                static = max(means.get((s, load, mix, comm), np.nan) for s in STATIC)
                good = bool(leak > static)
                ok &= good
                margin = leak - static
                if worst is None or not margin >= worst[0]:
                    worst = (margin, load, mix, comm, leak, static)
                if not good:
                    f.lines.append(
                        f"{load} mix {mix} {comm}: leaks {leak:.1f} <= static {static:.1f}"
                    )
    for strategy in FOUR:
        f.lines.append(
            f"{strategy:10} accepted "
            + " / ".join(
                _fmt(_cells(frame, strategy=strategy, load=load)["accepted"]) for load in LOADS
            )
        )
    if worst is not None:
        f.lines.append(
            f"smallest margin: {worst[1]} mix {worst[2]} {worst[3]}: least leak {worst[4]:.1f} "
            f"vs best static {worst[5]:.1f}"
        )
    f.met = bool(ok)
    return f


def f2_static_falls(frame: pd.DataFrame) -> Finding:
    f = Finding("F2", "static acceptance falls with load (Fig 14)", gated=True)
    means = _groups(frame, "accepted", ["strategy", "mix", "comm", "load"])
    ok = True
    for strategy in STATIC:
        for mix in _present(frame, "mix", MIXES):
            for comm in _present(frame, "comm", COMMS):
                vals = [means.get((strategy, mix, comm, load), np.nan) for load in LOADS]
                good = bool(vals[0] > vals[1] > vals[2])
                ok &= good
                if not good:
                    f.lines.append(
                        f"{strategy} mix {mix} {comm}: {vals[0]:.1f} / {vals[1]:.1f} / {vals[2]:.1f}"
                    )
        cells = _cells(frame, strategy=strategy)
        seeds_falling = 0
        seeds = sorted(set(cells["seed"]))
        for seed in seeds:
            per = cells[cells["seed"] == seed].groupby("load")["accepted"].mean()
            seeds_falling += bool(
                per.get("normal", np.nan) > per.get("heavy", np.nan) > per.get("very-heavy", np.nan)
            )
        f.lines.append(
            f"{strategy:10} accepted "
            + " / ".join(_fmt(cells[cells["load"] == load]["accepted"]) for load in LOADS)
            + f"; falling in {seeds_falling} of {len(seeds)} seeds (mean over mixes and patterns)"
        )
    f.met = bool(ok)
    return f


def f3_manhattan_vs_hilbert(frame: pd.DataFrame) -> Finding:
    f = Finding(
        "F3",
        "Manhattan / Hilbert accepted >= 0.9 at normal, <= 0.75 at very heavy (paper ~0.5)",
        gated=False,
    )
    ratios = {}
    for load in LOADS:
        h = _cells(frame, strategy="hilbert", load=load)["accepted"].mean()
        m = _cells(frame, strategy="manhattan", load=load)["accepted"].mean()
        ratios[load] = m / h
    f.lines.append("manhattan / hilbert: " + " / ".join(f"{ratios[load]:.3f}" for load in LOADS))
    if "manhattan-all" in set(frame["strategy"]):
        f.lines.append(
            "manhattan-all / hilbert: "
            + " / ".join(
                f"{_accepted(frame, 'manhattan-all', load) / _accepted(frame, 'hilbert', load):.3f}"
                for load in LOADS
            )
        )
    f.met = bool(ratios["normal"] >= 0.9 and ratios["very-heavy"] <= 0.75)
    return f


def f4_leak_nc_on_time(frame: pd.DataFrame) -> Finding:
    f = Finding(
        "F4",
        "types 2, 3, normal load, async: leak-nc on time > both static in >= 4 of 5 seeds (Fig 17a)",
        gated=True,
    )
    ok = True
    for comm in _present(frame, "comm", COMMS):
        for mix in ("2", "3"):
            nc = _per_seed(frame, "on_time", strategy="leak-nc", load="normal", mix=mix, comm=comm)
            h = _per_seed(frame, "on_time", strategy="hilbert", load="normal", mix=mix, comm=comm)
            m = _per_seed(frame, "on_time", strategy="manhattan", load="normal", mix=mix, comm=comm)
            best_static = np.maximum(h, m)
            wins = int((nc > best_static).sum())
            if comm == "async":
                ok &= wins >= 4 and len(nc) > 0
            f.lines.append(
                f"type {mix} {comm:5}: leak-nc wins {wins} of {len(nc)} seeds; on time per seed "
                f"leak-nc {list(nc.astype(int))}, hilbert {list(h.astype(int))}, "
                f"manhattan {list(m.astype(int))}" + ("" if comm == "async" else " (not gated)")
            )
    f.met = bool(ok)
    return f


def _cancel_table(frame: pd.DataFrame, load: str, mix: str, comm: str) -> dict[str, float]:
    col = _type_col(mix, "cancel_rate")
    return {s: _cells(frame, strategy=s, load=load, mix=mix, comm=comm)[col].mean() for s in FOUR}


def _cancel_line(frame: pd.DataFrame, load: str, mix: str, comm: str) -> str:
    col = _type_col(mix, "cancel_rate")
    return f"{load} type {mix} {comm}: cancel share " + ", ".join(
        f"{s} {_fmt(_cells(frame, strategy=s, load=load, mix=mix, comm=comm)[col], 3)}"
        for s in FOUR
    )


def f5_manhattan_type1(frame: pd.DataFrame) -> Finding:
    f = Finding(
        "F5",
        "type 1, normal, async: Manhattan has the lowest cancel share of the four (Fig 15a)",
        gated=False,
    )
    table = _cancel_table(frame, "normal", "1", "async")
    f.lines.append(_cancel_line(frame, "normal", "1", "async"))
    f.met = bool(table["manhattan"] == min(table.values()))
    return f


def f6_leak_nc_cancel(frame: pd.DataFrame) -> Finding:
    f = Finding(
        "F6",
        "types 2, 3, normal, async: leak-nc cancel share below both static (Fig 15a)",
        gated=False,
    )
    ok = True
    for mix in ("2", "3"):
        table = _cancel_table(frame, "normal", mix, "async")
        ok &= bool(table["leak-nc"] < min(table[s] for s in STATIC))
        f.lines.append(_cancel_line(frame, "normal", mix, "async"))
    f.met = bool(ok)
    return f


def f7_leak_cancel_rises(frame: pd.DataFrame) -> Finding:
    f = Finding(
        "F7",
        "types 2, 3, async: the leaks' cancel share rises from normal to very heavy (Fig 15)",
        gated=False,
    )
    ok = True
    for strategy in LEAKS:
        for mix in ("2", "3"):
            col = _type_col(mix, "cancel_rate")
            vals = [
                _cells(frame, strategy=strategy, load=load, mix=mix, comm="async")[col].mean()
                for load in LOADS
            ]
            ok &= bool(vals[2] > vals[0])
            f.lines.append(f"{strategy} type {mix}: " + " / ".join(f"{v:.3f}" for v in vals))
    f.met = bool(ok)
    return f


def f8_leak_vs_leak_nc(frame: pd.DataFrame) -> Finding:
    f = Finding(
        "F8",
        "very heavy, types 2, 3, async: contiguous leak cancels no more than leak-nc (Fig 15c)",
        gated=False,
    )
    ok = True
    for mix in ("2", "3"):
        table = _cancel_table(frame, "very-heavy", mix, "async")
        ok &= bool(table["leak"] <= table["leak-nc"])
        f.lines.append(_cancel_line(frame, "very-heavy", mix, "async"))
    f.met = bool(ok)
    return f


def f9_uniform_on_time(frame: pd.DataFrame) -> Finding:
    f = Finding(
        "F9",
        "uniform mix: leak-nc on time >= both static at every load, both patterns (Figs 17/18)",
        gated=False,
    )
    ok = True
    for comm in _present(frame, "comm", COMMS):
        for load in LOADS:
            vals = {
                s: _cells(frame, strategy=s, load=load, mix="uniform", comm=comm)["on_time"]
                for s in FOUR
            }
            ok &= bool(vals["leak-nc"].mean() >= max(vals[s].mean() for s in STATIC))
            f.lines.append(
                f"{load} {comm}: on time " + ", ".join(f"{s} {_fmt(v)}" for s, v in vals.items())
            )
    f.met = bool(ok)
    return f


def f10_compactness(frame: pd.DataFrame) -> Finding:
    f = Finding(
        "F10",
        "Manhattan partitions are more compact than Hilbert's (§3.2): compactness_norm",
        gated=True,
    )
    ok = True
    for load in LOADS:
        h = _cells(frame, strategy="hilbert", load=load)
        m = _cells(frame, strategy="manhattan", load=load)
        ok &= bool(m["compactness_norm"].mean() < h["compactness_norm"].mean())
        line = f"{load}: hilbert {_fmt(h['compactness_norm'], 4)}, manhattan {_fmt(m['compactness_norm'], 4)}"
        pairs = (
            h.set_index(["mix", "comm", "seed"])["compactness_norm"]
            .to_frame("h")
            .join(
                m.set_index(["mix", "comm", "seed"])["compactness_norm"].to_frame("m"), how="inner"
            )
        )
        line += f" (manhattan lower in {int((pairs['m'] < pairs['h']).sum())} of {len(pairs)} paired cells)"
        if "manhattan-all" in set(frame["strategy"]):
            a = _cells(frame, strategy="manhattan-all", load=load)
            line += f"; manhattan-all {_fmt(a['compactness_norm'], 4)}"
        f.lines.append(line)
    f.met = bool(ok)
    return f


def f11_fragmentation(frame: pd.DataFrame) -> Finding:
    f = Finding(
        "F11",
        "Manhattan fragments the free space more than Hilbert at heavy and very heavy (§5.1)",
        gated=False,
    )
    ok = True
    for load in LOADS:
        h = _cells(frame, strategy="hilbert", load=load)["free_fragmentation"]
        m = _cells(frame, strategy="manhattan", load=load)["free_fragmentation"]
        if load != "normal":
            ok &= bool(m.mean() > h.mean())
        f.lines.append(f"{load}: hilbert {_fmt(h, 3)}, manhattan {_fmt(m, 3)}")
    f.met = bool(ok)
    return f


def f12_sync(frame: pd.DataFrame) -> Finding:
    f = Finding(
        "F12",
        "type 1: sync cancels less than async for Hilbert and the contiguous leak (Figs 16/18)",
        gated=False,
    )
    ok = True
    col = _type_col("1", "cancel_rate")
    for strategy in ("hilbert", "leak", "manhattan"):
        parts = []
        for load in LOADS:
            a = _cells(frame, strategy=strategy, load=load, mix="1", comm="async")[col].mean()
            s = _cells(frame, strategy=strategy, load=load, mix="1", comm="sync")[col].mean()
            if strategy != "manhattan":
                ok &= bool(s < a)
            parts.append(f"{load} {a:.3f} -> {s:.3f}")
        f.lines.append(
            f"{strategy} (async -> sync): "
            + ", ".join(parts)
            + (" (not part of the verdict)" if strategy == "manhattan" else "")
        )
    f.met = bool(ok)
    return f


CHECKS = (
    c1_count_only,
    c2_leaks_accept,
    c3_spans,
    f1_leaks_accept_more,
    f2_static_falls,
    f3_manhattan_vs_hilbert,
    f4_leak_nc_on_time,
    f5_manhattan_type1,
    f6_leak_nc_cancel,
    f7_leak_cancel_rises,
    f8_leak_vs_leak_nc,
    f9_uniform_on_time,
    f10_compactness,
    f11_fragmentation,
    f12_sync,
)


def evaluate(frame: pd.DataFrame) -> list[Finding]:
    """Every finding, in the order of RESULTS-DEADLINE.md; one the sweep lacks the cells or
    columns for (a sweep without type 1, say) gets no verdict and says so."""
    findings = []
    for check in CHECKS:
        try:
            findings.append(check(frame))
        except KeyError as missing:
            key = check.__name__.split("_")[0].upper()
            findings.append(
                Finding(
                    key,
                    check.__name__,
                    gated=False,
                    lines=[f"not in this sweep: no {missing} column"],
                )
            )
    return findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dir", type=Path)
    args = parser.parse_args(argv)
    frame = read_sweep(args.sweep_dir)
    findings = evaluate(frame)
    print(
        f"{args.sweep_dir}: {len(frame)} cells, {int(frame['valid'].sum())} valid, "
        f"seeds {sorted(set(frame['seed']))}"
    )
    for finding in findings:
        print(finding.render())
    gated = [x for x in findings if x.gated]
    print(f"gated: {sum(bool(x.met) for x in gated)} of {len(gated)} MET")
    return 0


if __name__ == "__main__":
    sys.exit(main())
