"""benchmarks/cp_traces.py --matrix: where the whole-trace dispatcher x version x predictor matrix stands."""

import gzip
import importlib.util
import json
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "cp_traces", Path(__file__).resolve().parents[1] / "benchmarks" / "cp_traces.py"
)
cp_traces = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cp_traces)


def _record(
    spec: str, bsld: float, wait: float, symmetric: bool | None = True, valid: bool = True
) -> dict:
    rec = {
        "status": "ok",
        "trace": "T",
        "spec": spec,
        "valid": valid,
        "bsld_mean": bsld,
        "wait_mean": wait,
    }
    if symmetric is not None:
        rec["dispatcher"] = {"name": "x", "params": {"version": 3, "job_symmetry": symmetric}}
    return rec


def _journal(path: Path, decisions: int, gz: bool = False) -> None:
    lines = [json.dumps({"journal": 1})] + [json.dumps({"t": i}) for i in range(decisions)]
    data = ("\n".join(lines) + "\n").encode()
    if gz:
        with gzip.open(path, "wb") as fh:
            fh.write(data)
    else:
        path.write_bytes(data)


def test_matrix_cells_are_finished_runs_or_journal_progress(tmp_path):
    out = tmp_path / "runs.jsonl"
    records = [
        _record("easy-W", 9.0, 500.0, symmetric=None),
        _record("hcp-W", 3.0, 300.0),
        _record("hcp-L2:version=2,job_symmetry=false", 4.0, 400.0, symmetric=False),
        _record("hcp-R:reserve=1", 1.0, 100.0),  # not the default settings: not a cell
        _record("pcp20-W:version=1", 5.0, 500.0, valid=False),  # invalid: not done
        _record("pcp19-W", 7.0, 700.0, symmetric=False),  # older run without job symmetry ...
        _record("pcp19-W", 6.0, 600.0),  # ... and one with it: this one is shown
    ]
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    journals, parked = tmp_path / "journals", tmp_path / "parked"
    journals.mkdir()
    parked.mkdir()
    _journal(cp_traces.journal_path(journals, "T", "hcp-R:version=2"), 3)
    _journal(cp_traces.journal_path(journals, "T", "pcp19-R:version=1"), 2)
    _journal(
        parked / (cp_traces.journal_path(journals, "T", "pcp19-R:version=1").name + ".gz"),
        5,
        gz=True,
    )

    lines = cp_traces.matrix(out, "T", journals, parked).splitlines()
    assert (
        lines[0] == "| dispatcher | version | W | L2 | R |"
    )  # W, L2, R always; D on traces with names (or once it ran)
    rows = {
        tuple(c.strip() for c in line.strip("|").split("|")[:2]): [
            c.strip() for c in line.strip("|").split("|")[2:]
        ]
        for line in lines[2:]
        if line.startswith("| ")
    }
    assert rows[("easy", "")] == ["9.00 / 500", "-", "-"]
    assert rows[("hcp", "3")] == ["3.00 / 300", "-", "-"]
    assert rows[("hcp", "2")] == ["-", "4.00 / 400 †", "started 3"]
    assert rows[("pcp19", "3")] == ["6.00 / 600", "-", "-"]
    assert rows[("pcp19", "1")] == ["-", "-", "parked 5"]  # the longer journal
    assert rows[("pcp20", "1")] == ["-", "-", "-"]
    assert ("fifo", "") not in rows  # a baseline with no run at all is left out
    assert lines[-1].endswith(
        "hcp, pcp19 and pcp20 x versions 1-3 x W, L2, R: 3 done, 1 started, 1 parked, 22 to run."
    )
    assert cp_traces.journal_progress("T", "hcp-R:version=2", journals, parked) == ("started", 3)
    assert cp_traces.journal_progress("T", "pcp19-R:version=1", journals, parked) == ("parked", 5)
    assert cp_traces.journal_progress("T", "pcp20-R", journals, parked) is None


def test_parse_spec():
    assert cp_traces.parse_spec("hcp-L2:version=2,job_symmetry=false") == (
        "hcp",
        "L2",
        {"version": "2", "job_symmetry": "false"},
    )
    assert cp_traces.parse_spec("cp-hybrid-R") == ("cp-hybrid", "R", {})
