"""Sweep files with generator = "deadline" (sweep/spec.py: _deadline_entries): the load, type-mix
and pattern axes crossed with the seeds, defaults in the cell id, one-line errors naming the field."""

from __future__ import annotations

import pytest

from hpcdispatch.sweep import SweepSpecError, parse_sweep

# ---- generator = "deadline" ---------------------------------------------------------------

DEADLINE = 'dispatchers = ["count-only", "hilbert"]\n[[workloads]]\ngenerator = "deadline"\njobs = 50\n{extra}'


def test_deadline_generator_crosses_load_types_comm_and_seeds():
    spec = parse_sweep(
        DEADLINE.format(
            extra='load = ["normal", 150]\ntypes = [0, "uniform"]\ncomm = ["async", "sync"]\n'
            "seeds = { from = 1, count = 3 }\n"
        )
    )
    assert len(spec.cells) == 2 * 2 * 2 * 3 * 2  # loads x types x comms x seeds x dispatchers
    first = spec.cells[0]
    assert first.labels["workload"] == "deadline-normal-types0-async" and first.labels["seed"] == 1
    assert first.workload_spec.startswith(
        "synthetic:deadline,jobs=50,load=normal,types=0,comm=async,"
    )
    assert first.workload_spec.endswith(",seed=1")
    assert first.config["workload"]["runtime_scale"] == 16.0  # defaults filled in: part of the id
    labels = {c.labels["workload"] for c in spec.cells}
    assert "deadline-150-typesuniform-sync" in labels  # a number as load: its seconds


def test_deadline_generator_default_axes_and_a_changed_default_changes_the_id():
    one = parse_sweep(DEADLINE.format(extra="seed = 2\n"))
    assert [c.labels["workload"] for c in one.cells] == ["deadline-normal-typesuniform-async"] * 2
    other = parse_sweep(DEADLINE.format(extra="seed = 2\nruntime_scale = 20\n"))
    assert set(one.cell_ids()).isdisjoint(other.cell_ids())


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            "types = [0, 7]\n",
            r"workloads\[0\]: .*'types' must be one of 0, 1, 2, 3, uniform, got '7'",
        ),
        ('comm = "both"\n', r"workloads\[0\]: .*'comm' must be async or sync"),
        ('load = ["normal", "normal"]\n', r"line 5, workloads\[0\].load: lists a value twice"),
        ("runtime = 3\n", r"workloads\[0\]: unknown key\(s\) \['runtime'\]"),
        ("jobs_x = 1\n", r"unknown key\(s\) \['jobs_x'\]"),
        ('slack_sd = "wide"\n', r"line 5, workloads\[0\].slack_sd: must be a number"),
        ("load = []\n", r"workloads\[0\].load: is empty"),
    ],
)
def test_deadline_generator_errors_are_one_line_naming_the_field(extra, message):
    with pytest.raises(SweepSpecError, match=message) as info:
        parse_sweep(DEADLINE.format(extra=extra))
    assert "\n" not in str(info.value)


def test_a_dispatcher_parameter_added_at_its_old_value_keeps_the_cell_ids():
    """A sweep cell is keyed by the dispatcher's identity without the parameters added later
    (``ADDED_PARAMS``) while they have the value they were added with, so a sweep run before
    an addition resumes without recomputing; a changed value is a new cell."""
    from hpcdispatch.dispatchers.spec import DispatcherSpec

    plain = DispatcherSpec.parse("leak").cell_identity()
    assert plain == {
        "name": "leak",
        "params": {"contiguous": True, "admission": "free-node", "allocator": "first-fit"},
    }
    assert (
        DispatcherSpec.parse("leak").identity()["params"]["order"] == "fifo"
    )  # run.json keeps them all
    spelled = (
        'dispatchers = [{ name = "leak", order = "fifo", skip_hopeless = false, partial = true }]\n'
    )
    edf = 'dispatchers = [{ name = "leak", order = "edf" }]\n'
    body = '[[workloads]]\ngenerator = "deadline"\njobs = 50\nseed = 2\n'
    ids = {
        text: parse_sweep(text + body).cell_ids()
        for text in ('dispatchers = ["leak"]\n', spelled, edf)
    }
    assert ids['dispatchers = ["leak"]\n'] == ids[spelled]
    assert (
        parse_sweep('dispatchers = ["leak"]\n' + body).cells[0].config["dispatcher"] == plain
    )  # what is hashed
    assert set(ids[spelled]).isdisjoint(ids[edf])
    assert parse_sweep(edf + body).cells[0].config["dispatcher"]["params"]["order"] == "edf"
