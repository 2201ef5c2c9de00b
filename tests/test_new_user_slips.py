"""The slips a new user found in the command line (issue 51): each one pinned."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import cores_system

from hpcdispatch.cli.main import docstring_summary
from hpcdispatch.dispatchers import DispatcherSpec
from hpcdispatch.engine import simulate
from hpcdispatch.errors import ConfigError
from hpcdispatch.workload.loader import load_workload


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hpcdispatch", *args], capture_output=True, text=True
    )


def test_a_bad_predictor_suffix_is_named_as_such():
    with pytest.raises(ConfigError, match=r"'easy-L3': 'L3' is not a predictor .*W, L2, D, R"):
        DispatcherSpec.parse("easy-L3")
    assert DispatcherSpec.parse("easy-L2").predictor == "last-two"
    assert DispatcherSpec.parse("cp-rule").name == "cp-rule"  # a dash inside a name stays
    assert DispatcherSpec.parse("leak-nc").name == "leak-nc"
    p = cli("simulate", "-w", "synthetic:lublin,jobs=5", "-d", "easy-L3", "-o", "/nonexistent/x")
    assert p.returncode != 0 and "not a predictor" in p.stderr and "Traceback" not in p.stderr


def test_allocator_aliases_are_recorded_by_their_registered_name():
    for alias in ("bestfit", "BF", "best_fit", "best-fit"):
        spec = DispatcherSpec.parse(f"easy:allocator={alias}")
        assert spec.params == {"allocator": "best-fit"}
    table = DispatcherSpec.from_table({"name": "easy", "allocator": "firstfit"})
    assert table.params == {"allocator": "first-fit"}
    system = cores_system(2, 2)
    w = load_workload("synthetic:lublin,jobs=20,seed=1", system)
    r = simulate(system, w, "easy:allocator=bestfit")
    assert r.dispatcher["params"]["allocator"] == "best-fit"
    with pytest.raises(ConfigError, match="allocator must be one of best-fit, first-fit"):
        DispatcherSpec.parse("easy:allocator=worst").build().setup(system)


def test_dispatcher_descriptions_are_whole_sentences_without_markup():
    doc = """Advance reservation with :class:`~hpcdispatch.system.Grid` shapes and ``k``
    nodes, by the paper's *first fit*. More detail here.

    Second paragraph."""
    assert docstring_summary(doc) == (
        "Advance reservation with Grid shapes and k nodes, by the paper's first fit."
    )
    assert docstring_summary("One line without a full stop") == "One line without a full stop"
    assert docstring_summary(None) == ""
    p = cli("dispatchers")
    assert p.returncode == 0
    assert "``" not in p.stdout and ":class:" not in p.stdout


def test_workload_describes_skipped_records_once(tmp_path):
    swf = tmp_path / "t.swf"
    swf.write_text(
        "1 0 -1 10 1 -1 -1 1 20 -1 1 1 1 -1 1 1 -1 -1\n"
        "2 5 -1 0 1 -1 -1 1 20 -1 1 1 1 -1 1 1 -1 -1\n"  # run time 0: skipped
    )
    p = cli("workload", "-w", str(swf), "-s", "machine-s")
    assert p.returncode == 0, p.stderr
    assert (p.stdout + p.stderr).count("skipped 1 x runtime<=0") == 1


class FakeInfo:
    """The decision log's info, by key (as sim/info_log.py's InfoLog answers)."""

    def __init__(self, calls: list[dict]):
        self.calls = calls

    def keys(self) -> list[str]:
        return list(dict.fromkeys(k for c in self.calls for k in c))

    def column(self, key: str) -> list:
        return [c.get(key) for c in self.calls]


def test_cp_outcomes_count_how_the_decisions_went():
    from hpcdispatch.metrics.summary import cp_outcomes

    calls = [
        {"status": "empty"},
        {"status": "rule-optimal", "rule_objective": 0},
        {"status": "rule-optimal", "rule_objective": 0},
        {"status": "optimal", "rule_objective": 50, "objective": 40},  # improved
        {"status": "optimal", "rule_objective": 50, "objective": 50},  # solved, equal
        {"status": "feasible", "rule_objective": 50, "objective": 60, "fallback": "rule better"},
        {"status": "unknown", "rule_objective": 9, "fallback": "decision limit"},
    ]
    assert cp_outcomes(FakeInfo(calls)) == {
        "cp_decisions": 6,
        "cp_rule_optimal": 2,
        "cp_solves": 4,
        "cp_solver_improved": 1,
        "cp_fallbacks": 2,
    }
    assert cp_outcomes(FakeInfo([{"x": 1}])) == {}  # not a CP dispatcher
    assert cp_outcomes(None) == {}


def test_cp_counts_in_the_summary_are_recomputed_by_the_validator(tmp_path):
    import json

    from hpcdispatch.results.store import write_result
    from hpcdispatch.validation import validate_run_dir

    system = cores_system(4, 4)
    w = load_workload("synthetic:lublin,jobs=40,seed=4,load=0.9", system)
    r = simulate(system, w, "pcp20:deterministic=true")
    write_result(r, tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["cp_decisions"] >= summary["cp_rule_optimal"] + summary["cp_solves"] > 0
    assert validate_run_dir(tmp_path / "run").ok
    summary["cp_solves"] += 1
    (tmp_path / "run" / "summary.json").write_text(json.dumps(summary))
    report = validate_run_dir(tmp_path / "run")
    assert not report.ok and "cp_solves" in report.describe()
