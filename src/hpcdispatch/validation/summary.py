"""``summary.json`` recomputed from the schedule, with the validator's own arithmetic.

Every number the run's summary publishes is recomputed here from the tables the validator
judged (the workload it re-derived, the jobs and allocation rows, the decision log) and
compared (:func:`check_summary`); nothing here calls :mod:`hpcdispatch.metrics`. What is not
recomputed (compactness against the best partition, free-node fragmentation over time, the
simulator's own wall time) is listed in the report's notes, by name. The formulas:
docs/VALIDATION.md, "summary.json".
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcdispatch.vocabulary import CancelReason, JobStatus

if TYPE_CHECKING:
    import pandas as pd

SUMMARY_RTOL = 1e-9
BEHAVIOUR_TYPES = (0, 1, 2, 3)
#: published but not derived from the schedule (measurements of the run, or metrics whose
#: reference the validator does not rebuild): listed in the notes, never called checked
NOT_RECOMPUTED = (
    "compactness_mean",
    "compactness_norm",
    "free_fragmentation",
    "sim_wall_s",
    "repeatable",
    "valid",
    "dispatcher_params",
    "predictor",
    "allocation_iterations_total",
    "allocation_iterations_max",
    "decisions_reiterated",
    "postponed_by_allocation_total",
    "journal",
    "checkpoint",
    "engine",
    "prediction_correction",
    "prediction_revisions",
    "prediction_time_s",
    "rl_episode",
    "forks_asked",
    "forks_granted",
    "fork_grant_rate",
)
NOT_RECOMPUTED_PREFIXES = ("stop_", "exec_")


def _stats(values: np.ndarray, prefix: str, out: dict[str, Any]) -> None:
    if len(values) == 0:
        for stat in ("mean", "median", "p95", "max"):
            out[f"{prefix}_{stat}"] = float("nan")
        return
    out[f"{prefix}_mean"] = float(np.mean(values))
    out[f"{prefix}_median"] = float(np.median(values))
    out[f"{prefix}_p95"] = float(np.percentile(values, 95))
    out[f"{prefix}_max"] = float(np.max(values))


def _mean_std(values: np.ndarray) -> tuple[float, float]:
    if len(values) == 0:
        return float("nan"), float("nan")
    return float(np.mean(values)), float(np.std(values))


def recompute_summary(
    system: Any,
    workload: Mapping[str, np.ndarray],
    jobs: pd.DataFrame,
    allocations: pd.DataFrame,
    tau: float,
    decisions: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """The summary's numbers, from the tables (``workload``: the validator's columns by name,
    one row per job; ``jobs``: the schedule, first row per job id used)."""
    import pandas as pd

    ids = np.asarray(workload["job_id"])
    submit = np.asarray(workload["submit"], np.float64)
    first = jobs.drop_duplicates("job_id")
    at = pd.Index(first["job_id"].to_numpy()).get_indexer(ids)
    listed = at >= 0
    take = np.where(listed, at, 0)

    def aligned(name: str, fill: Any, dtype: Any = None) -> np.ndarray:
        if name not in first.columns or not len(first):
            return np.full(len(ids), fill, dtype)
        values = first[name].to_numpy(dtype)[take]
        return np.where(listed, values, fill)

    start = aligned("start", np.nan, np.float64)
    end = aligned("end", np.nan, np.float64)
    status = aligned("status", "", object).astype(str)
    killed = aligned("killed", False, bool) if "killed" in first.columns else status == "killed"
    ran = ~np.isnan(start)
    s, b, e = submit[ran], start[ran], end[ran]
    run = e - b
    turnaround = e - s
    wait = b - s
    slowdown = turnaround / np.maximum(run, 1.0)
    bsld = np.maximum(1.0, turnaround / np.maximum(run, tau))
    first_submit = float(submit.min()) if len(submit) else 0.0
    last_end = float(np.max(e)) if ran.any() else first_submit
    makespan = last_end - first_submit
    rejected_text = JobStatus.REJECTED.name.lower()
    out: dict[str, Any] = {
        "jobs": len(ids),
        "started": int(ran.sum()),
        "rejected": int((status == rejected_text).sum()),
        "killed": int(killed.sum()),
        "makespan": makespan,
        "first_submit": first_submit,
        "last_end": last_end,
        "bsld_tau": tau,
    }
    for name, values in (
        ("wait", wait),
        ("slowdown", slowdown),
        ("bounded_slowdown", bsld),
        ("turnaround", turnaround),
    ):
        _stats(values, name, out)
    out["wait_std"] = float(np.std(wait)) if len(wait) else float("nan")
    out["slowdown_ratio_mean"], out["slowdown_ratio_std"] = _mean_std(slowdown)

    # resources held: amount x seconds over every allocation row
    resources = list(system.resources)
    t_from = allocations["from"].to_numpy(np.float64)
    t_to = allocations["to"].to_numpy(np.float64)
    seconds = t_to - t_from
    total = np.asarray(system.capacity, np.float64).sum(axis=0)
    used = np.array(
        [float(np.dot(allocations[r].to_numpy(np.float64), seconds)) for r in resources]
    )
    span = max(last_end - first_submit, 1e-9)
    for r, name in enumerate(resources):
        out[f"utilization_{name}"] = float(used[r] / (total[r] * span)) if total[r] > 0 else 0.0
    core = resources.index("core") if "core" in resources else 0
    theo = float(used[core] / total[core]) if total[core] > 0 else 0.0
    out["theoretical_runtime_s"] = theo
    out["utilization_paper"] = theo / makespan if makespan > 0 else float("nan")

    # fragmentation and spread: each job's nodes over all its segments
    frag, spread = np.zeros(0), np.zeros(0)
    if len(allocations):
        job_code = pd.factorize(allocations["job_id"])[0].astype(np.int64)
        node = allocations["node"].to_numpy(np.int64)
        width = int(node.max()) + 1 if len(node) else 1
        key = np.unique(job_code * width + node)  # each job's distinct nodes, ascending
        job, node = key // width, key % width
        head = np.r_[True, job[1:] != job[:-1]]
        starts = np.flatnonzero(head)
        ends = np.r_[starts[1:], len(job)] - 1
        gap = np.r_[False, (np.diff(node) > 1) & ~head[1:]]
        frag = 1.0 + np.add.reduceat(gap.astype(np.float64), starts)
        spread = (node[ends] - node[starts] + 1) / (ends - starts + 1)
    out["fragmentation_mean"], out["fragmentation_std"] = _mean_std(np.asarray(frag))
    out["spread_mean"], out["spread_std"] = _mean_std(np.asarray(spread))

    out.update(_queue_length(submit, start, status != rejected_text, ran, last_end))

    # prediction quality: planned durations against what the jobs ran
    if "planned_duration" in first.columns:
        real = end - start
        ok = ~np.isnan(real)
        pred, real = aligned("planned_duration", np.nan, np.float64)[ok], real[ok]
        if len(pred):
            ratio = real / np.maximum(pred, 1e-9)
            out["prediction_mae_s"] = float(np.mean(np.abs(pred - real)))
            out["prediction_under_rate"] = float(np.mean(pred < real))
            out["prediction_over_rate"] = float(np.mean(pred > real))
            out["prediction_exact_rate"] = float(np.mean(pred == real))
            out["prediction_within_25pct"] = float(np.mean((ratio >= 0.75) & (ratio <= 1.25)))

    if decisions is not None and "elapsed_s" in decisions.columns:
        elapsed = decisions["elapsed_s"].to_numpy(np.float64)
        out["decisions"] = len(elapsed)
        out["decision_time_total_s"] = float(elapsed.sum()) if len(elapsed) else 0.0
        for stat, value in (
            ("mean", np.mean),
            ("median", np.median),
            ("p95", lambda v: np.percentile(v, 95)),
            ("max", np.max),
        ):
            out[f"decision_time_{stat}_s"] = float(value(elapsed)) if len(elapsed) else float("nan")

    if decisions is not None and "info" in decisions.columns:
        out.update(_cp_counts(decisions["info"]))

    if "deadline" in workload:
        out.update(_deadline_metrics(workload, first, aligned, status, end, submit))
    return out


def _cp_counts(info: pd.Series) -> dict[str, int]:
    """The CP dispatchers' decision counts, from the decision log's records as stored (JSON
    per call): calls with a queue, rule-optimal ones, model solves, solves whose objective
    beat the rule's without a fallback, and fallbacks. Empty without CP records."""
    records = []
    for text in info:
        if isinstance(text, str) and text.startswith("{"):
            try:
                rec = json.loads(text)
            except ValueError:
                continue
            if isinstance(rec, dict):
                records.append(rec)
    if not any("rule_objective" in r for r in records):
        return {}
    quiet = {None, "empty", "rule-optimal", "rule", "infeasible"}
    solved = [r for r in records if r.get("status") not in quiet]
    return {
        "cp_decisions": sum(r.get("status") not in (None, "empty") for r in records),
        "cp_rule_optimal": sum(r.get("status") == "rule-optimal" for r in records),
        "cp_solves": len(solved),
        "cp_solver_improved": sum(
            r.get("fallback") is None
            and isinstance(r.get("objective"), int | float)
            and isinstance(r.get("rule_objective"), int | float)
            and r["objective"] < r["rule_objective"]
            for r in solved
        ),
        "cp_fallbacks": sum(r.get("fallback") is not None for r in records),
    }


def _queue_length(
    submit: np.ndarray, start: np.ndarray, accepted: np.ndarray, ran: np.ndarray, last_end: float
) -> dict[str, Any]:
    """The queue length (accepted jobs submitted and not yet started): +1 at each one's
    submission, -1 at its start; its time-weighted mean over [first event, last end] and its
    maximum."""
    starts = start[accepted & ran]
    times = np.concatenate([starts, submit[accepted]])
    delta = np.concatenate([-np.ones(len(starts)), np.ones(int(accepted.sum()))])
    order = np.argsort(times, kind="stable")
    times, length = times[order], np.cumsum(delta[order])
    last = np.r_[times[1:] != times[:-1], True] if len(times) else np.zeros(0, bool)
    times, length = times[last], length[last]
    if len(times) == 0:
        mean = 0.0
    elif last_end - times[0] <= 0:
        mean = float(length[-1])
    else:
        widths = np.diff(np.r_[times, last_end])
        mean = float((length * widths).sum() / (last_end - times[0]))
    return {"queue_length_mean": mean, "queue_length_max": int(length.max()) if len(length) else 0}


def _deadline_metrics(
    workload: Mapping[str, np.ndarray],
    first: pd.DataFrame,
    aligned: Any,
    status: np.ndarray,
    end: np.ndarray,
    submit: np.ndarray,
) -> dict[str, Any]:
    deadline = np.asarray(workload["deadline"], np.float64)
    completed = (status == JobStatus.COMPLETED.name.lower()) | (status == "killed")
    rejected = status == JobStatus.REJECTED.name.lower()
    cancelled = status == JobStatus.CANCELLED.name.lower()
    on_time = completed & (end <= deadline + 1e-9)
    why = np.array(
        ["" if v is None or v != v else str(v) for v in aligned("cancel_reason", None, object)],
        dtype=object,
    )
    waiting = cancelled & (why == str(CancelReason.DEADLINE_WAITING))
    running = cancelled & (why == str(CancelReason.DEADLINE_RUNNING))

    def counts(sel: np.ndarray, prefix: str) -> dict[str, Any]:
        n = int(sel.sum())
        acc = int((sel & ~rejected).sum())
        canc = int((sel & cancelled).sum())
        good = int((sel & on_time).sum())
        return {
            f"{prefix}submitted": n,
            f"{prefix}accepted": acc,
            f"{prefix}rejected": n - acc,
            f"{prefix}cancelled": canc,
            f"{prefix}cancelled_waiting": int((sel & waiting).sum()),
            f"{prefix}cancelled_running": int((sel & running).sum()),
            f"{prefix}on_time": good,
            f"{prefix}acceptance_rate": acc / n if n else float("nan"),
            f"{prefix}cancel_rate": canc / acc if acc else float("nan"),
            f"{prefix}success_rate": good / n if n else float("nan"),
        }

    out = counts(np.ones(len(status), bool), "")
    del out["rejected"]  # (the run's rejection count, above)
    reasons = aligned("reject_reason", None, object)
    stages = Counter(
        str(r).split(":", 1)[0].strip()
        for r, rej in zip(reasons, rejected)
        if rej and r is not None
    )
    out["reject_reasons"] = dict(sorted(stages.items()))
    out["line0_passed"] = out["accepted"] + int(stages.get("shape", 0))
    if "behaviour" in workload:
        behaviour = np.asarray(workload["behaviour"], np.int64)
        for b in BEHAVIOUR_TYPES:
            sel = behaviour == b
            if sel.any():
                out.update(counts(sel, f"type{b}_"))
    ended = end[np.isfinite(end)]
    out["span_days"] = (
        float((ended.max() - submit.min()) / 86400.0)
        if len(ended) and len(submit)
        else float("nan")
    )
    return out


def _same(value: Any, want: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(value, dict) and value == want
    if isinstance(want, (bool, np.bool_)):
        return value is bool(want) or value == bool(want)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    if isinstance(want, (int, np.integer)) and not isinstance(want, bool):
        return isinstance(value, int) and value == int(want)
    value, want = float(value), float(want)
    if np.isnan(value) or np.isnan(want):
        return bool(np.isnan(value) and np.isnan(want))
    if np.isinf(value) or np.isinf(want):
        return value == want
    return abs(value - want) <= SUMMARY_RTOL * max(1.0, abs(value), abs(want))


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.12g}"
    return repr(value) if not isinstance(value, dict) else str(value)


def check_summary(
    summary: Mapping[str, Any],
    recomputed: Mapping[str, Any],
    identity: Mapping[str, Any],
) -> tuple[list[str], list[str]]:
    """``(problems, notes)``: every field of ``summary`` compared with ``recomputed`` (or with
    ``identity``: what the run names -- system, dispatcher, workload); a field the validator
    knows and the summary lacks is fine (not published); a field it does not know is listed."""
    problems: list[str] = []
    unknown: list[str] = []
    skipped: list[str] = []
    for key, value in summary.items():
        if key in identity:
            if value != identity[key]:
                problems.append(
                    f"summary.json: {key} is {value!r}, the run is {identity[key]!r} (run.json)"
                )
        elif key in recomputed:
            if not _same(value, recomputed[key]):
                problems.append(
                    f"summary.json: {key} is {_shown(value)}, recomputed from the schedule "
                    f"{_shown(recomputed[key])}"
                )
        elif key in NOT_RECOMPUTED or key.startswith(NOT_RECOMPUTED_PREFIXES):
            skipped.append(key)
        else:
            unknown.append(key)
    if unknown:
        problems.append(
            f"summary.json: {', '.join(sorted(unknown)[:8])} cannot be recomputed from the "
            "schedule (a field the validator does not know is not published)"
        )
    notes = []
    if skipped:
        notes.append(
            f"summary.json fields not derived from the schedule, not checked: {', '.join(skipped)}"
        )
    return problems, notes
