"""Per-run summary: QoS statistics, utilisation, makespan, dispatcher cost, queue length."""

from __future__ import annotations

from typing import Any

import numpy as np

from hpcdispatch.metrics.jobs import BSLD_TAU, job_metrics
from hpcdispatch.metrics.prediction import prediction_quality
from hpcdispatch.sim.result import SimulationResult
from hpcdispatch.vocabulary import JobStatus


def describe(values: np.ndarray) -> dict[str, float]:
    """Mean, median, 95th percentile and maximum of ``values`` (NaN for none)."""
    if len(values) == 0:
        return {
            "mean": float("nan"),
            "median": float("nan"),
            "p95": float("nan"),
            "max": float("nan"),
        }
    return {
        "mean": float(np.mean(values)),
        "median": float(np.median(values)),
        "p95": float(np.percentile(values, 95)),
        "max": float(np.max(values)),
    }


def queue_length_profile(
    submit: np.ndarray, start: np.ndarray, accepted: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Step function of the queue length: ``(times, length after each time)``."""
    sub = submit[accepted].astype(np.float64)
    st = start[accepted]
    st = st[~np.isnan(st)]
    # (the order of the events within one time does not matter: only the length after the
    # last event of each time is kept)
    times = np.concatenate([st, sub])
    delta = np.concatenate([-np.ones(len(st)), np.ones(len(sub))])
    order = np.argsort(times)
    times, delta = times[order], delta[order]
    length = np.cumsum(delta)
    last = np.r_[times[1:] != times[:-1], True] if len(times) else np.zeros(0, dtype=bool)
    return times[last], length[last]


def time_weighted_mean(times: np.ndarray, values: np.ndarray, t_end: float) -> float:
    if len(times) == 0:
        return 0.0
    span = t_end - times[0]
    if span <= 0:
        return float(values[-1])
    widths = np.diff(np.r_[times, t_end])
    return float((values * widths).sum() / span)


def resource_seconds(result: SimulationResult) -> np.ndarray:
    """Per resource type, the amount held times the seconds it was held, over every allocation
    row of the run."""
    w = result.workload
    rows = result.allocation_rows()
    seconds = rows.t_to - rows.t_from
    return np.array(
        [np.dot(rows.held(w, r).astype(np.float64), seconds) for r in range(len(w.resources))],
        dtype=np.float64,
    )


def utilization(
    result: SimulationResult, t0: float, t1: float, used: np.ndarray | None = None
) -> dict[str, float]:
    """Used / available resource-seconds per resource type over ``[t0, t1]`` (``used``: the
    run's :func:`resource_seconds`, when already known)."""
    used = resource_seconds(result) if used is None else used
    cap = result.system.total_capacity.astype(np.float64) * max(t1 - t0, 1e-9)
    return {
        name: float(used[r] / cap[r]) if cap[r] > 0 else 0.0
        for r, name in enumerate(result.workload.resources)
    }


def mean_std(values: np.ndarray) -> tuple[float, float]:
    """Mean and (population) standard deviation; NaN for no values."""
    if len(values) == 0:
        return float("nan"), float("nan")
    return float(np.mean(values)), float(np.std(values))


def topology_metrics(result: SimulationResult) -> dict[str, np.ndarray]:
    """Per started job (in job index order), on the nodes of its allocation (all segments;
    linear node order):

    - fragmentation: number of blocks of consecutive node indices;
    - spread: (last node index - first node index + 1) / number of nodes.
    """
    rows = result.allocation_rows()
    if len(rows) == 0:
        return {"fragmentation": np.zeros(0), "spread": np.zeros(0)}
    job, node = rows.job, rows.node
    order = None  # of the jobs' runs of rows, into job index order
    if (rows.segment > 0).any():  # a job that grew: its nodes are the union over its segments
        width = int(node.max()) + 1
        key = np.unique(job * width + node)
        job, node = key // width, key % width
    else:  # one segment per job, nodes ascending within it
        # a job's rows are consecutive (AllocationRows): each run of rows measured where it
        # is, the runs then put in job index order (no copy of every row in that order)
        run_job = job[np.r_[0, np.flatnonzero(job[1:] != job[:-1]) + 1]]
        order = np.argsort(run_job, kind="stable")
        if (np.diff(run_job[order]) == 0).any():  # (a job's rows apart: in job order after all)
            rows_order = np.argsort(job, kind="stable")
            job, node, order = job[rows_order], node[rows_order], None
    first = np.r_[True, job[1:] != job[:-1]]
    starts = np.flatnonzero(first)
    ends = np.r_[starts[1:], len(job)] - 1
    gap = np.diff(node) > 1
    gap &= ~first[1:]
    del first
    frag = 1 + np.add.reduceat(np.r_[False, gap], starts, dtype=np.int64)
    spread = (node[ends] - node[starts] + 1) / (ends - starts + 1)
    if order is not None:
        frag, spread = frag[order], spread[order]
    return {"fragmentation": frag.astype(np.float64), "spread": spread.astype(np.float64)}


def core_resource(resources: tuple[str, ...]) -> int:
    """The index of the ``core`` resource (the first resource when there is none)."""
    return resources.index("core") if "core" in resources else 0


def theoretical_runtime(result: SimulationResult, used: np.ndarray | None = None) -> float:
    """The AUCSCHED paper's theoretical runtime: sum over jobs of duration x cores held,
    divided by the system's total cores (seconds; ``used``: :func:`resource_seconds`)."""
    r = core_resource(tuple(result.workload.resources))
    total = float((resource_seconds(result) if used is None else used)[r])
    cap = float(result.system.total_capacity[r])
    return total / cap if cap > 0 else 0.0


def allocation_iterations(info: Any) -> dict[str, Any]:
    """Two-stage CP dispatchers (HCP'19): the scheduling stage's solves over the run
    (``allocation_iterations`` in a decision's info: 1 = placed at once), how many decisions
    needed more than one, the most in one decision, and the jobs postponed by allocation.
    Empty for dispatchers that do not record them."""
    if not hasattr(info, "column") or "allocation_iterations" not in info.keys():
        return {}
    its = np.array(
        [v for v in info.column("allocation_iterations") if v is not None], dtype=np.int64
    )
    postponed = [v for v in info.column("postponed_by_allocation") if v is not None]
    return {
        "allocation_iterations_total": int(its.sum()),
        "allocation_iterations_max": int(its.max()) if len(its) else 0,
        "decisions_reiterated": int((its > 1).sum()),
        "postponed_by_allocation_total": int(sum(postponed)),
    }


def stop_reasons(info: Any) -> dict[str, Any]:
    """CP dispatchers: how many decisions' (last) searches stopped for each reason (``stop``
    in a decision's info: optimal, gap, stall, limit, infeasible, invalid; the decision
    budget's record, cp/solve.py), as ``stop_<reason>``. Empty for dispatchers that do not
    record them."""
    if not hasattr(info, "column") or "stop" not in info.keys():
        return {}
    counts: dict[str, int] = {}
    for value in info.column("stop"):
        if value is not None:
            counts[f"stop_{value}"] = counts.get(f"stop_{value}", 0) + 1
    return dict(sorted(counts.items()))


def summary_unit(key: str) -> tuple[str, str, float]:
    """How a run summary's ``key`` is shown: ``(name, unit, scale)``: the value times
    ``scale`` is in ``unit``. Decision times are kept in seconds in summary.json and shown in
    milliseconds, under a name without the ``_s``; counts, ratios and fractions say so."""
    if key.startswith("decision_time") and key.endswith("_s"):
        return key.removesuffix("_s"), "ms", 1000.0
    if key.endswith("_s"):
        return key.removesuffix("_s"), "s", 1.0
    seconds = ("wait_", "turnaround_", "makespan", "first_submit", "last_end", "bsld_tau")
    if key.startswith(seconds):
        return key, "s", 1.0
    if key.startswith("utilization_") or key.endswith("_rate") or key.endswith("pct"):
        return key, "fraction (0-1)", 1.0
    if key.startswith(("slowdown", "bounded_slowdown")):
        return key, "ratio", 1.0
    if key.startswith("fragmentation"):
        return key, "blocks per job", 1.0
    if key.startswith("spread"):
        return key, "node range / nodes", 1.0
    if key.startswith("queue_length"):
        return key, "jobs", 1.0
    if key == "decisions":
        return key, "dispatcher calls", 1.0
    if key in ("jobs", "started", "rejected", "killed", "cancelled", "accepted", "on_time"):
        return key, "jobs", 1.0
    return key, "", 1.0


class RunSummary(dict[str, Any]):
    """A run's summary: a plain ``dict`` of metric -> value (``summary.json``), shown in a
    notebook as a table of metric, value and unit (decision times in ms)."""

    def _repr_html_(self) -> str:
        from html import escape

        rows = []
        for key, value in self.items():
            if isinstance(value, dict | list):
                continue
            if isinstance(value, bool) or value is None or isinstance(value, str):
                shown, unit, name = str(value), "", key
            else:
                name, unit, scale = summary_unit(key)
                v = float(value) * scale
                shown = f"{v:,.0f}" if v.is_integer() and abs(v) < 1e15 else f"{v:,.4g}"
            rows.append(
                f"<tr><td style='text-align:left'>{escape(name)}</td>"
                f"<td style='text-align:right'>{escape(shown)}</td>"
                f"<td style='text-align:left'>{escape(unit)}</td></tr>"
            )
        return (
            "<table><thead><tr><th>metric</th><th>value</th><th>unit</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
        )


def cp_outcomes(info: Any) -> dict[str, Any]:
    """CP dispatchers: how their decisions went, from each call's record (``status``,
    ``objective``, ``rule_objective``, ``fallback``): ``cp_decisions`` calls with a queue
    (``empty`` ones aside), of which ``cp_rule_optimal`` needed no search (every job the rule placed starts now),
    ``cp_solves`` ran the model, ``cp_solver_improved`` took the model's schedule with a
    better objective than the priority rule's, and ``cp_fallbacks`` kept the rule's (limit,
    no solution, rule better ...). Empty for dispatchers that do not record them."""
    if not hasattr(info, "column") or "rule_objective" not in info.keys():
        return {}
    status = info.column("status")
    objective = info.column("objective")
    rule = info.column("rule_objective")
    fallback = info.column("fallback")
    not_solved = (None, "empty", "rule-optimal", "rule", "infeasible")
    solves = [s not in not_solved for s in status]
    improved = [
        solved and f is None and o is not None and r is not None and o < r
        for solved, f, o, r in zip(solves, fallback, objective, rule)
    ]
    return {
        "cp_decisions": sum(s not in (None, "empty") for s in status),
        "cp_rule_optimal": sum(s == "rule-optimal" for s in status),
        "cp_solves": int(sum(solves)),
        "cp_solver_improved": int(sum(improved)),
        "cp_fallbacks": sum(f is not None for f in fallback),
    }


def summarize(result: SimulationResult, tau: float = BSLD_TAU) -> RunSummary:
    """One run's summary: QoS means and tails, utilisation, makespan, dispatch cost, by name."""
    w = result.workload
    submit = w.submit.astype(np.float64)
    m = job_metrics(submit, result.start, result.end, tau)
    started = ~np.isnan(result.start)
    accepted = result.status != JobStatus.REJECTED
    first_submit = float(submit.min()) if len(submit) else 0.0
    last_end = float(np.nanmax(result.end)) if started.any() else first_submit
    makespan = last_end - first_submit
    elapsed = result.decisions["elapsed"]
    qt, ql = queue_length_profile(submit, result.start, accepted)
    out: dict[str, Any] = {
        "system": result.system.name,
        "workload": w.source.spec,
        "dispatcher": result.dispatcher_name,
        "dispatcher_params": result.describe_dispatcher(),  # for people; run.json holds the identity
        "predictor": result.predictor,
        "jobs": int(len(w)),
        "started": int(started.sum()),
        "rejected": int((result.status == JobStatus.REJECTED).sum()),
        "killed": int(result.killed.sum()),
        "makespan": makespan,
        "first_submit": first_submit,
        "last_end": last_end,
        "bsld_tau": tau,
    }
    for key in ("wait", "slowdown", "bounded_slowdown", "turnaround"):
        for stat, value in describe(m[key]).items():
            out[f"{key}_{stat}"] = value
    used = resource_seconds(result)
    for name, value in utilization(result, first_submit, last_end, used).items():
        out[f"utilization_{name}"] = value
    # the AUCSCHED paper's metrics (Tables 5-8), mean and standard deviation over jobs
    out["wait_std"] = float(np.std(m["wait"])) if len(m["wait"]) else float("nan")
    out["slowdown_ratio_mean"], out["slowdown_ratio_std"] = mean_std(m["slowdown"])
    topo = topology_metrics(result)
    out["fragmentation_mean"], out["fragmentation_std"] = mean_std(topo["fragmentation"])
    out["spread_mean"], out["spread_std"] = mean_std(topo["spread"])
    theo = theoretical_runtime(result, used)
    out["theoretical_runtime_s"] = theo
    out["utilization_paper"] = theo / makespan if makespan > 0 else float("nan")
    out["decisions"] = int(len(elapsed))
    out["decision_time_total_s"] = float(elapsed.sum()) if len(elapsed) else 0.0
    for stat, value in describe(elapsed).items():
        out[f"decision_time_{stat}_s"] = value
    out.update(allocation_iterations(result.decisions.get("info")))
    out.update(stop_reasons(result.decisions.get("info")))
    out.update(cp_outcomes(result.decisions.get("info")))
    real = result.end - result.start
    out.update(prediction_quality(result.planned, real))
    out["queue_length_mean"] = time_weighted_mean(qt, ql, last_end)
    out["queue_length_max"] = int(ql.max()) if len(ql) else 0
    if w.has_deadlines:  # the deadline paper's counts and rates, compactness
        from hpcdispatch.metrics.deadline import deadline_summary

        out.update(deadline_summary(result))
    out["repeatable"] = repeatable(result.tags or {})
    out.update(result.notes.summary_fields())
    return RunSummary(out)


def repeatable(tags: dict[str, Any]) -> bool:
    """Whether running the same spec again gives the same schedule: not when a solver's
    searches were stopped by the wall clock (a dispatcher tagged ``uses_solver`` with
    ``deterministic`` false), where the machine's load decides how far each search got."""
    return not (tags.get("uses_solver") and not tags.get("deterministic", True))
