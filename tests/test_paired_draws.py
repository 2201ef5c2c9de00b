"""benchmarks/paired_draws.py: draws of a run across perturbed replicas, paired wins."""

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest

_spec = importlib.util.spec_from_file_location(
    "paired_draws", Path(__file__).resolve().parents[1] / "benchmarks" / "paired_draws.py"
)
paired_draws = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(paired_draws)


def _summary(values: dict[str, list[float]], valid: bool = True) -> pd.DataFrame:
    """Cells of one trace: draw 0 as recorded, draws 1.. as replicas (seed = draw)."""
    rows = []
    for run, vals in values.items():
        for draw, v in enumerate(vals):
            workload = {"trace": "t.swf", "max_jobs": 10}
            if draw:
                workload |= {"submit_jitter": 60, "jitter_seed": draw}
            rows.append(
                {
                    "label": f"x/{run}/{draw}",
                    "status": "done",
                    "valid": valid,
                    "run_label": run,
                    "system_spec": "auto",
                    "config": json.dumps({"workload": workload}),
                    "workload_label": "T" if draw == 0 else "T jittered 60 s",
                    "bsld": v,
                }
            )
    return pd.DataFrame(rows)


def test_paired_wins_and_mean_relative_difference_are_counted_per_draw():
    rows = paired_draws.draws(_summary({"a": [1.0, 2.0, 4.0, 3.0], "b": [2.0, 1.0, 5.0, 3.0]}))
    assert sorted(rows["draw"]) == [0, 0, 1, 1, 2, 2, 3, 3] and set(rows["trace"]) == {"T"}
    [r] = paired_draws.paired(rows, "a", "b", "bsld")
    # a lower in draws 0 and 2, higher in 1, equal in 3;
    # (1-2)/2 = -50 %, (2-1)/1 = +100 %, (4-5)/5 = -20 %, 0: mean +7.5 %
    assert r["a wins / ties / loses"] == "2 / 1 / 1"
    assert r["mean diff"] == "+7.50%" and r["min..max diff"] == "-50.00% .. +100.00%"
    [a] = paired_draws.per_run(rows, "bsld").query("run == 'a'").to_dict("records")
    assert a["draws"] == "1.000, 2.000, 4.000, 3.000" and a["replicas"] == "3.000 ± 1.000"
    assert a["range / median"] == "120%"  # (4 - 1) / 2.5


def test_replicas_are_grouped_by_their_workload_not_by_label():
    frame = _summary({"a": [1.0, 2.0]})
    other = frame.assign(
        config=[json.dumps({"workload": {"trace": "u.swf", "max_jobs": 10}})] * 2,
        workload_label="U",
    )
    rows = paired_draws.draws(pd.concat([frame, other.iloc[:1]]))
    assert sorted(zip(rows["trace"], rows["draw"])) == [("T", 0), ("T", 1), ("U", 0)]


def test_failed_or_invalid_cells_are_refused_not_dropped():
    with pytest.raises(SystemExit, match="not valid"):
        paired_draws.draws(_summary({"a": [1.0, 2.0]}, valid=False))
