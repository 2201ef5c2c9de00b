"""The report of many runs: a sweep directory, or a folder of run directories (the output of
``hpcdispatch compare``).

Cells that differ only by seed or repetition form a group (system, workload, run); tables
give the mean and the sample standard deviation over the group, figures draw the mean with
the standard deviation as error bar.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from hpcdispatch.errors import ConfigError
from hpcdispatch.report import plots
from hpcdispatch.report.compare import compare_order
from hpcdispatch.report.document import Bullets, ColourKey, Document, Figure, Items, Table, Text
from hpcdispatch.report.html import write_html
from hpcdispatch.report.style import dispatcher_styles
from hpcdispatch.report.tables import (
    FAMILIES,
    FAMILY_TITLES,
    Metric,
    aggregate,
    aggregate_rows,
    family_metrics,
    markdown_rows,
)
from hpcdispatch.results.store import write_frame, write_text

MAX_CELLS_PER_RUN = 50  # distributions read the logs of at most this many cells per run label
MAX_VALUES_PER_RUN = 200_000

FAMILY_FIGURES = {
    "qos": (
        "qos.png",
        "Mean per dispatcher and workload; error bars: standard deviation over seeds and repetitions "
        "(PCP'20 Figs 4-5, CP'19 Figs 2-4).",
    ),
    "resources": (
        "resources.png",
        "Utilisation per resource (and fragmentation / spread when the runs report them; "
        "AUCSCHED Tables 5-8); error bars: standard deviation.",
    ),
    "outcomes": (
        "outcomes.png",
        "Acceptance, cancellation and success rates (deadline paper Figs 14-18); error bars: "
        "standard deviation.",
    ),
    "cost": ("cost.png", "Dispatcher cost and prediction quality; error bars: standard deviation."),
}


#: families drawn with one panel per workload (x = metrics), wrapped three to a row: their
#: metrics share a scale, and a deadline sweep has many workloads and strategies
PER_WORKLOAD_FAMILIES = ("outcomes", "resources")


@dataclass
class RunSet:
    """Rows to report: ``status``, ``label``, ``system``, ``workload``, ``run``, ``error`` and
    the summary metrics; ``dirs`` maps a row index to its run directory (finished rows)."""

    title: str
    frame: pd.DataFrame
    dirs: dict[int, Path]
    meta: list[tuple[str, str]] = field(default_factory=list)
    pending: int = 0


def load_sweep_runs(root: str | Path) -> RunSet:
    from hpcdispatch.sweep.store import CELLS, SweepStore, summary_frame

    store = SweepStore(root)
    manifest = store.read_manifest()
    ids = [c["id"] for c in manifest["cells"]]
    scan = store.scan(ids)
    order = {cid: i for i, cid in enumerate(ids)}
    labels = {c["id"]: c["labels"] for c in manifest["cells"]}
    frame = summary_frame([*scan.done.values(), *scan.failed.values()], order, labels)
    if len(frame) == 0:
        raise ConfigError(f"{root}: no finished cell yet (run 'hpcdispatch sweep run' first)")
    frame = frame.rename(columns={"workload": "workload_spec"})
    frame["workload"] = frame["workload_label"]
    frame["run"] = frame["run_label"]
    if "system" not in frame:
        frame["system"] = None
    frame["system"] = frame["system"].where(frame["system"].notna(), frame["system_spec"])
    dirs = {
        i: Path(root) / CELLS / cid
        for i, (cid, st) in enumerate(zip(frame["cell_id"], frame["status"]))
        if st == "done"
    }
    n_seeds = frame.groupby(["system", "workload", "run"], sort=False).size()
    meta = [
        ("sweep", manifest.get("name", "")),
        (
            "cells",
            f"{len(ids)} ({len(scan.done)} done, {len(scan.failed)} failed, {len(scan.pending)} pending)",
        ),
        ("systems", ", ".join(dict.fromkeys(frame["system"].astype(str)))),
        ("workloads", ", ".join(dict.fromkeys(frame["workload"].astype(str)))),
        ("dispatchers", ", ".join(dict.fromkeys(frame["run"].astype(str)))),
        (
            "cells per group",
            f"{n_seeds.min()}-{n_seeds.max()}"
            if n_seeds.min() != n_seeds.max()
            else str(n_seeds.min()),
        ),
        ("output directory", str(Path(root).resolve())),
    ]
    if manifest.get("description"):
        meta.insert(1, ("description", manifest["description"]))
    return RunSet(
        f"hpcdispatch sweep: {manifest.get('name', '')}", frame, dirs, meta, len(scan.pending)
    )


def load_run_collection(root: str | Path) -> RunSet:
    """Every sub-directory of ``root`` that holds a run (``summary.json`` and ``run.json``), in
    the order of ``hpcdispatch compare`` (its comparison.csv) when ``root`` is its output, so that
    every dispatcher keeps the colour it has on the compare page; else by name."""
    rows, dirs = [], {}
    subs = sorted(p for p in Path(root).iterdir() if p.is_dir())
    order = compare_order(Path(root))
    if order:
        subs.sort(key=lambda p: order.get(p.name, len(order)))
    for sub in subs:
        if (sub / "summary.json").is_file() and (sub / "run.json").is_file():
            s = json.loads((sub / "summary.json").read_text())
            s = {
                k: (json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v)
                for k, v in s.items()
            }
            s.update(
                status="done",
                label=sub.name,
                run=s.get("label") or sub.name,
                error=None,
                workload_spec=s.get("workload"),
            )
            spec = str(s.get("workload", ""))
            s["workload"] = spec if spec.startswith("synthetic:") else Path(spec).name
            dirs[len(rows)] = sub
            rows.append(s)
    if not rows:
        raise ConfigError(
            f"{root}: no run directories (sub-directories with summary.json and run.json)"
        )
    frame = pd.DataFrame(rows)
    meta = [("runs", str(len(rows))), ("directory", str(Path(root).resolve()))]
    return RunSet(f"hpcdispatch runs in {Path(root).name}", frame, dirs, meta)


def _distribution(
    rs: RunSet, done: pd.DataFrame, filename: str, column: str, scale: float = 1.0
) -> dict[str, np.ndarray]:
    out: dict[str, list[np.ndarray]] = {}
    counts: dict[str, int] = {}
    for i, run in zip(done.index, done["run"]):
        if counts.get(run, 0) >= MAX_CELLS_PER_RUN:
            continue
        if i not in rs.dirs:
            continue
        path = rs.dirs[i] / filename
        if not path.is_file():
            continue
        values = pd.read_parquet(path, columns=[column])[column].to_numpy(dtype=float) * scale
        if len(values) == 0:  # e.g. a cell run with record_decisions = false
            continue
        out.setdefault(run, []).append(values)
        counts[run] = counts.get(run, 0) + 1
    result = {}
    for run, parts in out.items():
        v = np.concatenate(parts)
        if (
            len(v) > MAX_VALUES_PER_RUN
        ):  # an evenly spaced subset of the sorted values keeps the ECDF's shape
            v = np.sort(v)[np.linspace(0, len(v) - 1, MAX_VALUES_PER_RUN).astype(int)]
        result[run] = v
    return result


def _job_distributions(
    rs: RunSet, done: pd.DataFrame
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Wait times and bounded slowdowns of the started jobs, pooled over the cells of each run
    label (at most MAX_CELLS_PER_RUN cells; at most MAX_VALUES_PER_RUN values, evenly spaced
    in sorted order, which keeps an ECDF's shape)."""
    from hpcdispatch.metrics.jobs import BSLD_TAU, bounded_slowdowns

    waits: dict[str, list[np.ndarray]] = {}
    bslds: dict[str, list[np.ndarray]] = {}
    for i, run in zip(done.index, done["run"]):
        if i not in rs.dirs or len(waits.get(run, [])) >= MAX_CELLS_PER_RUN:
            continue
        path = rs.dirs[i] / "jobs.parquet"
        if not path.is_file():
            continue
        jobs = pd.read_parquet(path, columns=["submit", "start", "end"])
        submit, start, end = (jobs[c].to_numpy(dtype=float) for c in ("submit", "start", "end"))
        ran = ~np.isnan(start)
        waits.setdefault(run, []).append(start[ran] - submit[ran])
        bslds.setdefault(run, []).append(
            bounded_slowdowns(submit[ran], start[ran], end[ran], BSLD_TAU)
        )

    def pooled(parts: dict[str, list[np.ndarray]]) -> dict[str, np.ndarray]:
        out = {}
        for run, arrays in parts.items():
            v = np.sort(np.concatenate(arrays))
            if len(v) > MAX_VALUES_PER_RUN:
                v = v[np.linspace(0, len(v) - 1, MAX_VALUES_PER_RUN).astype(int)]
            out[run] = v
        return out

    return pooled(waits), pooled(bslds)


def _with_group(stats: pd.DataFrame) -> pd.DataFrame:
    """x-axis groups: the workload, with its system when the runs span several systems."""
    stats = stats.copy()
    several = stats["system"].nunique(dropna=False) > 1
    stats["group"] = [
        f"{w}\non {s}" if several else str(w) for w, s in zip(stats["workload"], stats["system"])
    ]
    return stats


def _has_nonzero(stats: pd.DataFrame, m: Metric) -> bool:
    """Whether some group has a mean of ``m`` other than 0 (a panel of zeros is not drawn)."""
    values = pd.to_numeric(stats[f"{m.key}_mean"], errors="coerce").to_numpy(dtype=float)
    return bool(np.any(np.nan_to_num(values) != 0))


def _identical_note(info: plots.PlotInfo) -> str:
    return "".join(f" Identical for {', '.join(g)}: drawn once." for g in info.identical)


def write_runset_report(rs: RunSet, out: str | Path) -> Path:
    """Tables (CSV + markdown), figures (PNG), report.md and report.html into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    frame = rs.frame
    write_frame(out / "cells.csv", frame)
    done = frame[frame["status"] == "done"]
    failed = frame[frame["status"] == "failed"]
    doc = Document(rs.title)
    doc.intro.append(Items(rs.meta))
    styles = dispatcher_styles(done["run"].astype(str)) if len(done) else {}
    if styles:
        doc.intro.append(ColourKey([(x, st.color, st.linestyle_name) for x, st in styles.items()]))
    if len(done) == 0:
        doc.intro.append(
            Text("No cell finished successfully: there is nothing to tabulate.", note=True)
        )

    if len(
        done
    ):  # a deadline sweep's point, the paper's panels, first; the generic tables after them
        from hpcdispatch.report.deadline import add_deadline_panels

        add_deadline_panels(doc, done, out, styles)
    for family in FAMILIES:
        metrics = family_metrics(done, family) if len(done) else []
        if not metrics:
            continue
        stats = aggregate(done, metrics)
        write_frame(out / f"{family}.csv", stats)
        header, rows = aggregate_rows(stats, metrics)
        write_text(out / f"{family}.md", markdown_rows(header, rows) + "\n")
        sec = doc.section(FAMILY_TITLES[family])
        sec.elements.append(Table(header, rows, text_columns=3, csv=f"{family}.csv"))
        png, caption = FAMILY_FIGURES[family]
        drawn = [m for m in metrics if _has_nonzero(stats, m)]
        zero = [m.title for m in metrics if m not in drawn]
        if drawn:  # many workloads: a panel each, wrapped; else one panel of grouped bars
            plot = (
                plots.plot_bars_per_group
                if family in PER_WORKLOAD_FAMILIES
                else plots.plot_grouped_bars
            )
            info = plot(
                _with_group(stats),
                drawn,
                out / png,
                FAMILY_TITLES[family],
                group="group",
                styles=styles,
            )
            sec.elements.append(Figure(out / png, caption, legend=info.legend))
        if zero:  # an empty panel says nothing: left out, and said so
            sec.elements.append(
                Text(f"0 for every run, so not drawn: {', '.join(zero)}.", note=True)
            )
        if family == "qos":
            waits, bslds = _job_distributions(rs, done)
            if any(len(v) for v in waits.values()):
                info = plots.plot_qos_ecdf(waits, bslds, out / "qos_ecdf.png", styles)
                sec.elements.append(
                    Figure(
                        out / "qos_ecdf.png",
                        "Wait time and bounded slowdown of the started jobs, pooled over the cells "
                        f"of each dispatcher (at most {MAX_CELLS_PER_RUN} cells each; ECDF, log "
                        "x-axis)." + _identical_note(info),
                        legend=info.legend,
                    )
                )
        if family == "cost":
            dec = _distribution(rs, done, "decisions.parquet", "elapsed_s", 1000.0)
            if dec:
                info = plots.plot_ecdf(
                    dec,
                    out / "decision_time.png",
                    "decision time per dispatcher call [ms]",
                    "Decision-time distribution",
                    floor=1e-3,
                    styles=styles,
                    ylabel="fraction of dispatcher calls",
                )
                sec.elements.append(
                    Figure(
                        out / "decision_time.png",
                        "Wall-clock time of every dispatcher call, pooled over the cells of each "
                        f"dispatcher (at most {MAX_CELLS_PER_RUN} cells each; ECDF)."
                        + _identical_note(info),
                        legend=info.legend,
                    )
                )
            acc = _distribution(rs, done, "prediction_accuracy.parquet", "accuracy")
            if acc:
                info = plots.plot_accuracy_ecdf(acc, out / "prediction_accuracy.png", styles)
                sec.elements.append(
                    Figure(
                        out / "prediction_accuracy.png",
                        "Prediction accuracy A = real / predicted duration, pooled per dispatcher "
                        "and predictor (ECDF; CP'19 Fig. 1)." + _identical_note(info),
                        legend=info.legend,
                    )
                )
    if len(failed):
        cols = [c for c in ("label", "error_type", "error") if c in failed]
        rows = [[str(v) for v in r] for r in failed[cols].itertuples(index=False)]
        write_frame(
            out / "failed.csv", failed[["cell_id", *cols]] if "cell_id" in failed else failed[cols]
        )
        write_text(out / "failed.md", markdown_rows(cols, rows) + "\n")
        sec = doc.section(f"Failed cells ({len(failed)})")
        sec.elements.append(Table(cols, rows, text_columns=len(cols), csv="failed.csv"))
    if rs.pending:
        doc.intro.append(
            Text(
                f"{rs.pending} cells have not run yet: the tables cover the finished ones.",
                note=True,
            )
        )
    sec = doc.section("Definitions")
    sec.elements.append(
        Bullets(
            [
                "wait = start - submit; slowdown = (wait + run) / run; bounded slowdown = max(1, "
                "(wait + run) / max(run, 10 s)).",
                "utilisation = resource-seconds used / (capacity x (last end - first submit)).",
                "mean ± std: mean over the cells of a group (seeds, repetitions) and their sample standard deviation; "
                "n = number of cells.",
                "decision time: wall-clock time of one dispatcher call (machine dependent).",
                "prediction accuracy A = real / predicted duration; MAE = mean |predicted - real|.",
            ]
        )
    )
    write_text(out / "report.md", doc.to_markdown(out))
    return write_html(doc, out / "report.html")
