"""The command line: the embedded default, simulate/validate round trip, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from helpers import pythonpath, trace


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hpcdispatch", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"COLUMNS": "120", "PATH": "/usr/bin:/bin", **pythonpath()},
        timeout=600,
    )


@pytest.mark.slow
def test_compare_writes_table_report_and_valid_runs(tmp_path):
    out = tmp_path / "out"
    p = run(
        "compare",
        "-w",
        "synthetic:lublin,jobs=300,seed=2,load=0.9",
        "-d",
        "fifo,easy,conservative:allocator=best-fit",
        "-o",
        str(out),
        "-q",
    )
    assert p.returncode == 0, p.stderr
    assert "conservative (best-fit)" in p.stdout and "report:" in p.stdout  # a readable label
    frame = pd.read_csv(out / "comparison.csv")
    assert frame["label"].tolist() == ["fifo", "easy", "conservative-allocator_best-fit"]  # dirs
    assert frame["display_label"].tolist() == ["fifo", "easy", "conservative (best-fit)"]
    assert frame["valid"].all()
    assert f"report: {out / 'report.html'}" in p.stdout.replace("\n", "")
    for name in (
        "report.html",
        "report.md",
        "qos_ecdf.png",
        "slowdown_by_class.png",
        "usage_time.png",
        "cost.png",
        "prediction_accuracy.png",
        "by_class.csv",
        "fifo/jobs.parquet",
        "easy/summary.json",
    ):
        assert (out / name).is_file(), name


def test_simulate_then_validate(tmp_path):
    out = tmp_path / "run"
    p = run(
        "simulate",
        "-w",
        str(trace("KTH-SP2-1996-2.1-cln.swf.gz")),
        "--max-jobs",
        "500",
        "-d",
        "easy",
        "-o",
        str(out),
        "-q",
    )
    assert p.returncode == 0, p.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs"] == 500 and summary["system"] == "kth-sp2"
    # the metrics with their units (rich markup would swallow a "[s]"), long times also in h / days
    lines = {
        line.split("  ")[0].strip(): line for line in p.stdout.splitlines() if "  " in line.strip()
    }
    for title in (
        "mean wait [s]",
        "makespan [s]",
        "max decision time [ms]",
        "mean bounded slowdown",
        "core utilisation",
    ):
        assert title in lines, p.stdout
    assert (
        f"{summary['makespan']:,.0f} (" in lines["makespan [s]"]
        and "days)" in lines["makespan [s]"]
    ), p.stdout
    v = run("validate", str(out))
    assert v.returncode == 0 and "schedule valid" in v.stdout and "re-read" in v.stdout
    # corrupt the schedule: validate must fail with exit code 1 and name the violation
    jobs = pd.read_parquet(out / "allocations.parquet")
    jobs.loc[jobs.index[:40], "node"] = 0
    jobs.to_parquet(out / "allocations.parquet", index=False)
    v = run("validate", str(out))
    assert v.returncode == 1 and "capacity" in v.stdout


@pytest.mark.slow
def test_simulate_with_corrected_predictions(tmp_path):
    out = tmp_path / "run"
    p = run(
        "simulate",
        "-w",
        str(trace("KTH-SP2-1996-2.1-cln.swf.gz")),
        "--max-jobs",
        "500",
        "-d",
        "easy-L2",
        "--correct-predictions",
        "ladder",
        "-o",
        str(out),
        "-q",
    )
    assert p.returncode == 0, p.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["prediction_correction"] == "ladder" and summary["prediction_revisions"] > 0
    assert run("validate", str(out)).returncode == 0
    bad = run(
        "simulate",
        "-w",
        "synthetic:lublin,jobs=20",
        "-d",
        "easy",
        "--correct-predictions",
        "double",
        "-q",
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_simulate_with_a_journal_replays_on_the_second_run(tmp_path):
    journal = tmp_path / "run.jsonl"
    args = [
        "simulate",
        "-w",
        "synthetic:lublin,jobs=150,seed=3,load=0.9",
        "-d",
        "cp-rule",
        "--journal",
        str(journal),
    ]
    first = run(*args, "-o", str(tmp_path / "a"), "-q")
    assert first.returncode == 0, first.stderr
    calls = len(journal.read_text().splitlines()) - 1
    # (rich wraps its lines at 80 columns when not on a terminal: compare words, not lines)
    assert calls > 50 and f"0 decisions replayed, {calls} recorded" in " ".join(
        first.stdout.split()
    )
    second = run(*args, "-o", str(tmp_path / "b"), "-q")
    assert second.returncode == 0, second.stderr
    assert f"{calls} decisions replayed, 0 recorded" in " ".join(second.stdout.split())
    a = pd.read_parquet(tmp_path / "a" / "jobs.parquet")
    b = pd.read_parquet(tmp_path / "b" / "jobs.parquet")
    assert a["start"].equals(b["start"])
    # a dispatcher with memory between calls is refused, in one line
    p = run(
        "simulate",
        "-w",
        "synthetic:lublin,jobs=20",
        "-d",
        "conservative",
        "--journal",
        str(tmp_path / "c.jsonl"),
        "-o",
        str(tmp_path / "c"),
        "-q",
    )
    assert (
        p.returncode == 2
        and "cannot resume from a journal" in p.stderr
        and "Traceback" not in p.stderr
    )


@pytest.mark.slow
def test_errors_are_one_clear_line(tmp_path):
    cases = [
        (
            ["simulate", "-w", str(tmp_path / "missing.swf"), "-o", str(tmp_path / "o")],
            "does not exist",
        ),
        (
            [
                "simulate",
                "-w",
                "synthetic:lublin,jobs=10",
                "-s",
                "nosuch",
                "-o",
                str(tmp_path / "o"),
            ],
            "unknown system preset 'nosuch'",
        ),
        (
            [
                "simulate",
                "-w",
                "synthetic:lublin,jobs=10",
                "-d",
                "easy:depth=3",
                "-o",
                str(tmp_path / "o"),
            ],
            "has no parameter 'depth'",
        ),
        (
            [
                "simulate",
                "-w",
                "synthetic:lublin,jobs=10",
                "-d",
                "magic",
                "-o",
                str(tmp_path / "o"),
            ],
            "unknown dispatcher 'magic'",
        ),
        (
            [
                "simulate",
                "-w",
                "synthetic:lublin,jobs=10",
                "-s",
                "from-trace",
                "-o",
                str(tmp_path / "o"),
            ],
            "needs an SWF trace",
        ),
    ]
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    sweep = tmp_path / "s.toml"
    sweep.write_text('dispatchers = ["fifo"]\n[[workloads]]\ngenerator = "lublin"\njobs = 20\n')
    run_dir = tmp_path / "run"
    assert (
        run("simulate", "-w", "synthetic:lublin,jobs=20", "-o", str(run_dir), "-q").returncode == 0
    )
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in run_dir.iterdir():
        (broken / f.name).write_bytes(
            f.read_bytes()[:200] if f.name == "jobs.parquet" else f.read_bytes()
        )
    cases += [
        (
            ["simulate", "-w", "synthetic:lublin,jobs=10", "-o", str(blocker / "o")],
            "is a file, not a directory",
        ),
        (
            ["compare", "-w", "synthetic:lublin,jobs=10", "-d", "", "-o", str(tmp_path / "c")],
            "names no dispatcher",
        ),
        (
            [
                "compare",
                "-w",
                "synthetic:lublin,jobs=10",
                "-d",
                "easy,easy",
                "-o",
                str(tmp_path / "c"),
            ],
            "names 'easy' twice",
        ),
        (
            ["sweep", "run", str(sweep), "--out", str(tmp_path / "sw"), "--dask", "bogus"],
            "cannot reach the Dask scheduler",
        ),
        (["validate", str(broken)], "jobs.parquet: damaged Parquet file"),
    ]
    for args, expected in cases:
        p = run(*args, *(["-q"] if args[0] in ("simulate", "compare", "sweep") else []))
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert expected in " ".join(p.stderr.split()) and "Traceback" not in p.stderr, p.stderr


def test_systems_lists_the_presets():
    p = run("systems")
    assert (
        p.returncode == 0
        and "eurora" in p.stdout
        and "kit-forhlr2" in p.stdout
        and "machine-l" in p.stdout
    )


@pytest.mark.slow
def test_console_output_in_a_log_file(tmp_path):
    # not a terminal (a pipe, as in a log file): plain progress lines, units in the headers,
    # long names wrapped rather than cut at 80 columns, and a note on runs that cannot repeat
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "hpcdispatch",
            "compare",
            "-w",
            "synthetic:lublin,jobs=150,seed=2",
            "-d",
            "fifo,easy:allocator=best-fit,hcp",
            "-o",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"},
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    assert "fifo: 150 / 150 jobs done (100 %)" in p.stdout
    header = p.stdout[p.stdout.index("dispatcher") :]
    assert "[s]" in header and "[ms]" in header
    assert "easy-allocator_best-fit" in p.stdout and "…" not in p.stdout
    assert "note: hcp searched with wall-clock time limits" in " ".join(p.stderr.split())
    assert "deterministic=true makes it repeatable" in " ".join(p.stderr.split())
    # ... and in the runs' summaries and the report
    import json

    repeats = {
        d: json.loads((tmp_path / "out" / d / "summary.json").read_text())["repeatable"]
        for d in ("fifo", "easy-allocator_best-fit", "hcp")
    }
    assert repeats == {"fifo": True, "easy-allocator_best-fit": True, "hcp": False}
    report = " ".join((tmp_path / "out" / "report.md").read_text().split())
    assert "Not repeatable: hcp searched with wall-clock time limits" in report
    assert "deterministic=true makes it repeatable" in report


HEAVY_MODULES = ("numpy", "pandas", "pyarrow", "matplotlib", "ortools", "numba", "dask", "scipy")


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["simulate", "--help"],
        ["compare", "--help"],
        ["sweep", "--help"],
        ["instances", "--help"],
        ["report", "--help"],
        ["--version"],
    ],
)
def test_help_imports_no_heavy_library(args):
    """``--help`` answers at once: none of the numerical or solver libraries is imported
    (issue 37: under 0.3 s; the figure is in docs/PERFORMANCE.md)."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom hpcdispatch.cli.main import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        f"print('LOADED', sorted(m for m in {HEAVY_MODULES!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "LOADED []" in out, out[-300:]


def test_unit_mode_choices_are_the_mappings():
    from hpcdispatch.cli.main import UNIT_MODE_CHOICES
    from hpcdispatch.workload.mapping import UNIT_MODES

    assert tuple(UNIT_MODE_CHOICES) == tuple(UNIT_MODES)


def test_cp_status_codes_are_or_tools_own():
    from ortools.sat.python import cp_model

    from hpcdispatch.cp.solve import STATUS

    assert STATUS == {
        cp_model.OPTIMAL: "optimal",
        cp_model.FEASIBLE: "feasible",
        cp_model.INFEASIBLE: "infeasible",
        cp_model.MODEL_INVALID: "invalid",
        cp_model.UNKNOWN: "unknown",
    }


EXAMPLE_JOBS = str(Path(__file__).resolve().parents[1] / "examples" / "jobs.csv")


@pytest.mark.slow
@pytest.mark.parametrize(
    "workload, engine, absent",
    [
        # a FIFO run pays for what it uses: OR-Tools and matplotlib stay out
        ("synthetic:lublin,jobs=50,seed=1", "auto", ("ortools", "matplotlib", "dask")),
        # scipy (grid partitions, Lublin's daily cycle) only in the runs that use it: importing the
        # dispatcher registry costs about 0.25 s less (issue 37)
        (EXAMPLE_JOBS, "auto", ("scipy", "ortools", "matplotlib")),
        # on the compiled engine numba's BLAS probe does not import scipy.linalg (0.23 s;
        # compiled/runner.py: load_numba_registries)
        # (--engine compiled fails when the run cannot be compiled)
        ("synthetic:lublin,jobs=50,seed=1", "compiled", ("scipy.linalg", "ortools", "matplotlib")),
    ],
)
def test_a_fifo_run_imports_only_what_it_uses(tmp_path, workload, engine, absent):
    code = (
        "import sys\nfrom hpcdispatch.cli.main import main\n"
        f"try:\n    main(['simulate', '-w', {workload!r}, '-s', 'machine-s', '-d', 'fifo', '--engine', {engine!r}, "
        f"'-q', '-o', {str(tmp_path / 'o')!r}])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        f"print('LOADED', sorted(m for m in {absent!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "LOADED []" in out, out[-300:]


@pytest.mark.slow
@pytest.mark.parametrize(
    "bad, named",
    [
        (
            "easy:allocator=bogus",
            "allocator must be one of best-fit, first-fit, slurm-linear, got 'bogus'",
        ),
        (
            "pcp20:delta=-1",
            "dispatcher 'pcp20': delta must be a number > 0 (seconds), got -1.0",
        ),
        ("aucsched:time_limit=0", "time_limit must be a number > 0 (seconds), got 0.0"),
        ("easy-XX", "is not a predictor"),
        ("nosuch", "unknown dispatcher"),
    ],
)
def test_compare_checks_every_spec_before_the_first_run(tmp_path, bad, named):
    """A mistake in the last spec is found before the first (long) run, as one line naming it."""
    out = tmp_path / "out"
    p = run(
        "compare",
        "-w",
        "synthetic:lublin,jobs=3000,seed=2,load=0.9",
        "-d",
        f"conservative,{bad}",
        "-o",
        str(out),
    )
    assert p.returncode == 2, p.stdout + p.stderr
    assert named in p.stderr and "Traceback" not in p.stderr
    assert "conservative: done" not in p.stdout  # nothing ran
    assert not out.exists()


def test_workload_table_keeps_its_units():
    p = run("workload", "-w", "synthetic:lublin,jobs=50,seed=1", "-s", "machine-s")
    assert p.returncode == 0, p.stderr
    assert "span [days]" in p.stdout and "mean run time [s]" in p.stdout


@pytest.mark.parametrize("name_length", [8, 23, 24, 25, 31, 40, 60])
def test_a_narrow_table_wraps_names_and_keeps_numbers_whole(monkeypatch, name_length):
    # compare's table at 80 columns: a long dispatcher name folds, but no number, unit or
    # header word is split across lines (rich adds 3 characters per column around the texts)
    import io
    import re

    from rich.console import Console

    from hpcdispatch.cli import main as cli_main

    out = io.StringIO()
    monkeypatch.setattr(cli_main, "console", Console(file=out, width=80, color_system=None))
    header = [
        "dispatcher",
        "mean wait [s]",
        "mean bsld",
        "util.",
        "makespan [s]",
        "max decision [ms]",
        "valid",
    ]
    name = ("easy-L2-allocator_best-fit" * 3)[:name_length]
    rows = [
        [name, "21,500", "40.25", "0.49", "1,234,567", "0.123", "yes"],
        ["fifo", "6,677", "3.1", "0.49", "987,654", "0.004", "yes"],
    ]
    cli_main.console.print(cli_main.plain_table("compare", header, rows))
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    words = set(re.findall(r"\S+", text))
    for cell in [c for row in rows for c in row[1:]] + [w for h in header for w in h.split()]:
        assert cell in words, (cell, text)


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec, loaded, absent",
    [
        ("pcp20", ("ortools.sat.python.cp_model", "numba"), ()),
        ("hcp", ("ortools.sat.python.cp_model", "numba"), ()),
        ("cp-rule", ("numba",), ("ortools",)),  # builds no model: OR-Tools stays out
        ("aucsched", ("ortools.sat.python.cp_model",), ()),
        ("conservative", ("numba",), ("ortools",)),
        ("easy", (), ("ortools",)),
    ],
)
def test_setup_loads_what_the_first_decision_would(spec, loaded, absent):
    """A dispatcher's ``setup`` imports what its first decision would otherwise load on first
    use (OR-Tools, the compiled profile search: about 0.2 s each), so that the first decision's
    time measures deciding; before this, the first decision of a pcp20 run on SDSC-SP2 took
    0.22 s, its slowest later one 0.11 s. Nothing is loaded before ``setup``."""
    watched = tuple(loaded) + tuple(absent)
    code = (
        "import sys\nfrom hpcdispatch.dispatchers import make_dispatcher\n"
        "from hpcdispatch.system.io import load_system\n"
        f"d = make_dispatcher({spec!r})\nsystem = load_system('machine-s')\n"
        f"print('BEFORE', sorted(m for m in {watched!r} if m in sys.modules))\n"
        "d.setup(system)\n"
        f"print('AFTER', sorted(m for m in {watched!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "BEFORE []" in out, out[-300:]
    assert f"AFTER {sorted(loaded)!r}" in out, out[-300:]


@pytest.mark.slow
def test_setup_compiles_the_profile_kernels_when_the_cache_lacks_them(tmp_path):
    """With an empty numba cache (a first run, a numba upgrade, a changed kernels.py) the
    profile search is compiled in ``setup``, a few seconds, not inside the first timed
    decision (a review found 3.5 s there for conservative on a cold cache)."""
    code = (
        "from hpcdispatch.dispatchers import make_dispatcher\nfrom hpcdispatch.system.io import load_system\n"
        "from hpcdispatch.compiled import kernels\n"
        "before = len(kernels.profile_earliest.signatures), len(kernels.profile_compress.signatures)\n"
        "make_dispatcher('conservative').setup(load_system('machine-s'))\n"
        "print('COMPILED', before, (len(kernels.profile_earliest.signatures), "
        "len(kernels.profile_compress.signatures)))"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    assert "COMPILED (0, 0) (1, 1)" in out, out[-300:]


def test_simulate_and_compare_print_the_deadline_outcomes(tmp_path):
    """Issue 48: on a deadline workload ``simulate`` and ``compare`` print submitted /
    accepted / rejected (by reason) / cancelled (waiting, running) / on time, per type; the
    numbers are the run's summary.json's. A workload without deadlines prints no such table
    (test_simulate_then_validate's KTH run)."""
    out = tmp_path / "run"
    p = run(
        "simulate",
        "-s",
        "hlrn2-grid",
        "-w",
        "synthetic:deadline,jobs=80,load=heavy,types=uniform,seed=2",
        "-d",
        "leak:admission=queue",
        "-o",
        str(out),
        "-q",
    )
    assert p.returncode == 0, p.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["cancelled_waiting"] > 0  # the queue's jobs expire waiting: the table must say so
    lines = [x.split() for x in p.stdout.splitlines()]
    assert "deadline outcomes" in p.stdout
    row = next(x for x in lines if x[:2] == ["leak-admission_queue", "all"])
    want = [s[k] for k in ("submitted", "accepted", "rejected")]
    want += [s[k] for k in ("cancelled_waiting", "cancelled_running", "on_time")]
    assert [int(v.replace(",", "")) for v in row[2:8]] == want
    types = [x[2] for x in lines if x[:2] == ["leak-admission_queue", "type"]]
    assert types == [str(b) for b in range(4) if s.get(f"type{b}_submitted")]
    cmp_out = tmp_path / "cmp"
    p = run(
        "compare",
        "-s",
        "hlrn2-grid",
        "-w",
        "synthetic:deadline,jobs=80,load=heavy,types=2,seed=2",
        "-d",
        "count-only,leak",
        "-o",
        str(cmp_out),
        "-q",
    )
    assert p.returncode == 0, p.stderr
    lines = [x.split() for x in p.stdout.splitlines()]
    for label in ("count-only", "leak"):
        s = json.loads((cmp_out / label / "summary.json").read_text())
        row = next(x for x in lines if x[:2] == [label, "all"])
        assert int(row[3]) == s["accepted"] and int(row[4]) == s["rejected"]
        reasons = ", ".join(f"{k} {v}" for k, v in s["reject_reasons"].items())
        assert " ".join(row[8:]) == reasons and s["rejected"] > 0
        assert [x[:3] for x in lines if x[:2] == [label, "type"]] == [[label, "type", "2"]]
