"""benchmarks/deadline_findings.py: the verdicts on a tiny hand-made summary (no sweep run)."""

import importlib.util
import sys
from pathlib import Path

import pandas as pd
import pytest

_spec = importlib.util.spec_from_file_location(
    "deadline_findings", Path(__file__).resolve().parents[1] / "benchmarks" / "deadline_findings.py"
)
deadline_findings = importlib.util.module_from_spec(_spec)
sys.modules["deadline_findings"] = deadline_findings  # its dataclass looks its module up
_spec.loader.exec_module(deadline_findings)

LOADS = ("normal", "heavy", "very-heavy")


def _row(strategy: str, load: str, mix: str, comm: str, seed: int, **values: float) -> dict:
    spec = f"synthetic:deadline,jobs=1000,load={load},types={mix},comm={comm},seed={seed}"
    base = {
        "status": "done",
        "valid": True,
        "run_label": strategy,
        "workload": spec,
        "seed": seed,
        "submitted": 1000,
        "accepted": 0,
        "on_time": 0,
        "cancel_rate": 0.0,
        "compactness_norm": 1.0,
        "free_fragmentation": 0.0,
        "span_days": 60.0,
    }
    if mix.isdigit():
        base[f"type{mix}_cancel_rate"] = 0.0
    return base | values


def _frame(
    on_time_nc_type2: list[int], count_only_normal: int = 500, manhattan_compactness: float = 1.02
) -> pd.DataFrame:
    """One comm (async), mixes 2 and 3, five seeds. Static accepts 400 / 150 / 80, the leaks all;
    static on time 100 per seed; leak-nc on time 200 for type 3 and ``on_time_nc_type2`` for type 2."""
    rows = []
    accepted_static = {"normal": 400, "heavy": 150, "very-heavy": 80}
    accepted_count = {"normal": count_only_normal, "heavy": 300, "very-heavy": 200}
    for load in LOADS:
        for mix in ("2", "3"):
            for seed in range(1, 6):
                rows.append(
                    _row("count-only", load, mix, "async", seed, accepted=accepted_count[load])
                )
                rows.append(
                    _row(
                        "hilbert",
                        load,
                        mix,
                        "async",
                        seed,
                        accepted=accepted_static[load],
                        on_time=100,
                        compactness_norm=1.05,
                    )
                )
                rows.append(
                    _row(
                        "manhattan",
                        load,
                        mix,
                        "async",
                        seed,
                        accepted=accepted_static[load],
                        on_time=100,
                        compactness_norm=manhattan_compactness,
                    )
                )
                rows.append(_row("leak", load, mix, "async", seed, accepted=1000, on_time=150))
                nc = on_time_nc_type2[seed - 1] if mix == "2" else 200
                rows.append(_row("leak-nc", load, mix, "async", seed, accepted=990, on_time=nc))
    frame = pd.DataFrame(rows)
    return frame


def _evaluate(frame: pd.DataFrame, tmp_path: Path) -> dict[str, object]:
    frame.to_parquet(tmp_path / "summary.parquet")
    findings = deadline_findings.evaluate(deadline_findings.read_sweep(tmp_path))
    return {f.key: f for f in findings}


def test_three_of_five_seeds_is_not_met_four_is(tmp_path: Path) -> None:
    # type 2: leak-nc beats the best static (100) in seeds 1-3 only; seeds 4, 5 tie at 100 (not more)
    three = _evaluate(_frame([101, 150, 300, 100, 100]), tmp_path)["F4"]
    assert three.met is False
    assert any("type 2 async: leak-nc wins 3 of 5 seeds" in line for line in three.lines)
    four = _evaluate(_frame([101, 150, 300, 100, 101]), tmp_path)["F4"]
    assert four.met is True
    assert any("type 2 async: leak-nc wins 4 of 5 seeds" in line for line in four.lines)


def test_acceptance_bars_by_hand(tmp_path: Path) -> None:
    found = _evaluate(_frame([200] * 5), tmp_path)
    assert found["F1"].met is True  # 990 and 1000 > 400 / 150 / 80
    assert found["F2"].met is True  # 400 > 150 > 80
    assert found["C2"].met is True  # 990 / 1000 = 0.99 >= 0.95
    assert found["C1"].met is True  # 500 in [410, 610], 500 > 300 > 200
    assert found["F10"].met is True  # 1.02 < 1.05 at every load
    rendered = found["F4"].render()
    assert rendered.startswith("F4 [gate]:") and "-> MET" in rendered


@pytest.mark.parametrize(
    "count_only_normal, met", [(409, False), (410, True), (610, True), (611, False), (300, False)]
)
def test_count_only_band_edges(tmp_path: Path, count_only_normal: int, met: bool) -> None:
    # 300 is below the band and equal to heavy's 300: not strictly falling either
    assert (
        _evaluate(_frame([200] * 5, count_only_normal=count_only_normal), tmp_path)["C1"].met is met
    )


def test_leak_below_static_or_less_compact_manhattan_fail(tmp_path: Path) -> None:
    frame = _frame([200] * 5, manhattan_compactness=1.05)  # equal is not "more compact"
    low = (frame["run_label"] == "leak") & frame["workload"].str.contains("load=heavy,types=3")
    frame.loc[low, "accepted"] = 150  # equal to static: not more
    found = _evaluate(frame, tmp_path)
    assert found["F10"].met is False
    assert found["F1"].met is False
    assert any(
        "heavy mix 3 async: leaks 150.0 <= static 150.0" in line for line in found["F1"].lines
    )
    frame.loc[low, "accepted"] = 940  # 94 %: C2 fails, F1 holds again
    found = _evaluate(frame, tmp_path)
    assert found["C2"].met is False and found["F1"].met is True
