"""Solve the same dumped CP instances with several dispatchers and compare (PCP'20 sec. 5.3).

A simulation with ``dump_instances=DIR`` (``--dump-instances DIR``) writes every dispatching
instance as JSON. :func:`evaluate` reads them back and, for each instance and dispatcher,
records the decision time, the model size (variables and constraints; the model is built
even when the dispatcher's exact shortcuts would skip it, so sizes are comparable on every
instance) and the objective of the decision under the model's objective. Ratios against a
baseline dispatcher per instance give PCP'20's Figures 6 (variables) and 7 (time).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hpcdispatch.cp.instance import DispatchInstance
from hpcdispatch.cp.pipeline import CPDispatcher
from hpcdispatch.cp.policy import Policy
from hpcdispatch.cp.rule import horizon_units, rule_schedule
from hpcdispatch.dispatchers import DispatcherSpec
from hpcdispatch.errors import ConfigError
from hpcdispatch.system.model import NodeType, System


def system_of_instance(inst: DispatchInstance) -> System:
    """The system an instance was taken on (node types: runs of identical capacity rows)."""
    types: list[NodeType] = []
    rows = inst.capacity.tolist()
    start = 0
    for n in range(1, len(rows) + 1):
        if n == len(rows) or rows[n] != rows[start]:
            cap = {r: int(v) for r, v in zip(inst.resources, rows[start])}
            types.append(NodeType(f"t{len(types)}", n - start, cap))
            start = n
    return System(name=inst.system or "instance", resources=inst.resources, node_types=tuple(types))


def model_size(disp: CPDispatcher, inst: DispatchInstance) -> tuple[int, int]:
    """Variables and constraints of the dispatcher's model for ``inst`` (0, 0 without a model)."""
    if disp.MODEL is None:
        return 0, 0
    policy = Policy(inst, disp.settings, disp.flavour)
    node_level = disp.node_level
    jobs = disp.model_jobs(inst, policy, node_level)
    if not jobs:
        return 0, 0
    d_max = max(j.duration for j in jobs)
    rule = disp.hint_rule(
        rule_schedule(inst, policy, jobs, disp._best_fit, node_level, d_max), jobs, policy, d_max
    )
    return disp.build_model(
        inst, policy, jobs, rule, d_max, horizon_units(policy, inst, jobs)
    ).size()


def evaluate(
    directory: str | Path,
    specs: list[DispatcherSpec | str],
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    force_model: bool = True,
    min_queued: int = 1,
    record: str | Path | None = None,
) -> pd.DataFrame:
    """Solve every dumped instance with every spec; one row per (instance, dispatcher).

    ``force_model``: build and solve each model even where the priority rule already starts
    every job now (a dispatcher skips the solver there; forcing it compares the models
    themselves on every instance, as PCP'20 section 5.3 does). Instances with fewer than
    ``min_queued`` queued jobs are left out; ``limit`` counts the instances kept.

    ``record``: a JSON-lines file the rows of each instance are appended to as soon as it is
    solved; started again with the same file (and the same dispatchers and options), the
    instances it holds are taken from it, not solved again (their decision times are those of
    the first run). A last line cut short by an interruption is dropped.
    """
    parsed = [s if isinstance(s, DispatcherSpec) else DispatcherSpec.parse(s) for s in specs]
    files = sorted(Path(directory).glob("instance-*.json"))
    if not files:
        raise ConfigError(
            f"{directory}: no instance-*.json files (simulate with --dump-instances first)"
        )
    header = {
        "instance_eval": 1,
        "dispatchers": [s.run_label for s in parsed],
        "force_model": force_model,
        "min_queued": min_queued,
    }
    done = _recorded(Path(record), header) if record is not None else {}
    sink = _open_record(Path(record), header) if record is not None else None
    rows: list[dict[str, Any]] = []
    dispatchers: dict[str, CPDispatcher] = {}  # by run label
    system_key = None
    kept = 0
    for k, path in enumerate(files):
        if limit and kept >= limit:
            break
        if path.name in done:  # solved by an earlier, interrupted evaluation
            rows.extend(done[path.name])
            kept += bool(done[path.name])
            if progress is not None:
                progress(k + 1, len(files))
            continue
        inst = DispatchInstance.load(path)
        if len(inst.queued) < min_queued:
            if sink is not None:
                _append(sink, path.name, [])
            if progress is not None:
                progress(k + 1, len(files))
            continue
        kept += 1
        key = (inst.resources, inst.capacity.tobytes())
        if key != system_key:
            system = system_of_instance(inst)
            dispatchers = {}
            for spec in parsed:
                d = spec.build()
                if not isinstance(d, CPDispatcher):
                    raise ConfigError(
                        f"'{spec.written}' is not a CP dispatcher (instances are CP dispatching instances)"
                    )
                d.set_params(force_model=force_model)  # (before setup: it builds the options)
                d.setup(system)
                dispatchers[spec.run_label] = d
            system_key = key
        first_row = len(rows)
        for label, d in dispatchers.items():
            t0 = time.perf_counter()
            placed, info = d.decide(inst)
            took = time.perf_counter() - t0
            variables, constraints = (
                (info["variables"], info["constraints"])
                if "variables" in info
                else model_size(d, inst)
            )
            objective = (
                info.get("objective", info.get("rule_objective", 0))
                if not info.get("fallback")
                else info.get("rule_objective", 0)
            )
            rows.append(
                {
                    "instance": path.name,
                    "time": inst.time,
                    "queued": len(inst.queued),
                    "in_model": info.get("in_model", 0),
                    "dispatcher": label,
                    "variables": variables,
                    "constraints": constraints,
                    "decision_s": took,
                    "objective": objective,
                    "rule_objective": info.get("rule_objective", 0),
                    "status": info.get("status"),
                    "dispatched": len(placed),
                    "fallback": info.get("fallback", ""),
                }
            )
        if sink is not None:
            _append(sink, path.name, rows[first_row:])
        if progress is not None:
            progress(k + 1, len(files))
    if sink is not None:
        sink.close()
    if not rows:
        raise ConfigError(f"{directory}: no instance with at least {min_queued} queued jobs")
    return pd.DataFrame(rows)


def _recorded(path: Path, header: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Instance file name -> its rows, from an earlier evaluation's record (empty when there is
    none). A record of other dispatchers or options is an error; a torn last line is cut off."""
    if not path.is_file() or path.stat().st_size == 0:
        return {}
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    complete, torn = lines[:-1], lines[-1]
    try:
        first = json.loads(complete[0]) if complete else None
    except ValueError:
        first = None
    if first != header:
        raise ConfigError(
            f"{path}: a record of another evaluation ({str(first)[:120]}); this one is {header}. "
            "Delete it, or write to another --out"
        )
    done: dict[str, list[dict[str, Any]]] = {}
    for n, line in enumerate(complete[1:], 2):
        try:
            entry = json.loads(line)
            done[str(entry["instance"])] = [dict(r) for r in entry["rows"]]
        except (ValueError, KeyError, TypeError):
            raise ConfigError(
                f"{path}, line {n}: damaged record; delete the file to evaluate again"
            ) from None
    if torn:
        with path.open("r+b") as fh:
            fh.truncate(len(raw) - len(torn))
    return done


def _open_record(path: Path, header: dict[str, Any]) -> Any:
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.is_file() or path.stat().st_size == 0
    fh = path.open("a", encoding="utf-8")
    if new:
        fh.write(json.dumps(header) + "\n")
        fh.flush()
    return fh


def _append(fh: Any, instance: str, rows: list[dict[str, Any]]) -> None:
    """One instance's rows as one line, flushed (an interruption loses at most this line)."""
    fh.write(json.dumps({"instance": instance, "rows": rows}, default=_plain) + "\n")
    fh.flush()


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON")


def ratios(frame: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per instance and dispatcher: variables, time and objective divided by the baseline's."""
    wide = frame.pivot_table(
        index="instance",
        columns="dispatcher",
        values=["variables", "decision_s", "objective"],
        aggfunc="first",
    )
    out = []
    for d in frame["dispatcher"].unique():
        if d == baseline:
            continue
        part = pd.DataFrame(
            {
                "instance": wide.index,
                "dispatcher": d,
                "variables_ratio": _ratio(wide["variables"][d], wide["variables"][baseline]),
                "time_ratio": _ratio(wide["decision_s"][d], wide["decision_s"][baseline]),
                "objective_ratio": _ratio(wide["objective"][d], wide["objective"][baseline]),
            }
        )
        out.append(part)
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def _ratio(a: pd.Series, b: pd.Series) -> np.ndarray:
    """``a / b``; NaN where the baseline is 0 (e.g. no model was built: nothing to compare)."""
    a, b = a.to_numpy(dtype=float), b.to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1), np.nan)
