"""Decision journal: an interrupted run resumes and gives the run that was not interrupted."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest

from hpcdispatch.dispatchers import make_dispatcher
from hpcdispatch.dispatchers.cp import HCP
from hpcdispatch.errors import ConfigError
from hpcdispatch.metrics import summarize
from hpcdispatch.sim import SimulationOptions, Simulator
from hpcdispatch.sim.journal import JournalError
from hpcdispatch.system import load_system
from hpcdispatch.validation import validate_result
from hpcdispatch.workload import load_workload

pytestmark = pytest.mark.usefixtures("compiled_kernels")  # (tests/conftest.py)

SPEC = "synthetic:lublin,jobs=150,seed=9,load=0.95"


@pytest.fixture(scope="module")
def case():
    system = load_system("eurora")
    return system, load_workload(SPEC, system)


class CountingHCP(HCP):
    """hcp that counts its real calls and can be made to stop the run after ``stop_after``."""

    calls = 0
    stop_after: int | None = None

    def _dispatch(self, view):
        if CountingHCP.stop_after is not None and CountingHCP.calls >= CountingHCP.stop_after:
            raise KeyboardInterrupt
        CountingHCP.calls += 1
        return super()._dispatch(view)


def hcp(counting: bool = False):
    # deterministic: the solver is bounded by its deterministic time, so two runs agree
    cls = CountingHCP if counting else HCP
    return cls(delta=0.2, deterministic=True)


def run(case, dispatcher, journal=None, **options):
    system, wl = case
    result = Simulator(
        system, wl, dispatcher, options=SimulationOptions(**options), journal=journal
    ).run()
    report = validate_result(result)
    assert report.ok, report.violations[:3]
    return result


def interrupted(case, path, after: int, **options) -> None:
    CountingHCP.calls, CountingHCP.stop_after = 0, after
    try:
        with pytest.raises(KeyboardInterrupt):
            run(case, hcp(counting=True), path, **options)
    finally:
        CountingHCP.stop_after = None


def test_resumed_run_equals_uninterrupted_run(case, tmp_path):
    clean = run(case, hcp())
    n_calls = len(clean.decisions["elapsed"])
    assert n_calls > 60
    path = tmp_path / "j.jsonl"
    interrupted(case, path, after=40)
    assert len(path.read_text().splitlines()) == 1 + 40  # header + the 40 calls made

    CountingHCP.calls = 0
    resumed = run(case, hcp(counting=True), path)
    assert CountingHCP.calls == n_calls - 40  # only the unrecorded calls were made again
    assert resumed.notes.journal.replayed == 40
    assert resumed.notes.journal.recorded == n_calls - 40
    np.testing.assert_array_equal(resumed.start, clean.start)
    np.testing.assert_array_equal(resumed.end, clean.end)
    assert resumed.jobs_frame().equals(clean.jobs_frame())  # same nodes too
    infos = resumed.decisions["info"]
    assert all(infos[k].get("replayed") for k in range(40)) and not any(
        infos[k].get("replayed") for k in range(40, n_calls)
    )
    # the replayed decisions keep their recorded wall-clock time and record (status, model size)
    recorded = [json.loads(line) for line in path.read_text().splitlines()[1:41]]
    assert resumed.decisions["elapsed"][:40].tolist() == [r["elapsed"] for r in recorded]
    assert [infos[k].get("status") for k in range(40)] == [
        r["info"].get("status") for r in recorded
    ]

    # a complete journal: the whole run replays without a single dispatcher call
    CountingHCP.calls = 0
    again = run(case, hcp(counting=True), path)
    assert CountingHCP.calls == 0 and again.notes.journal.replayed == n_calls
    np.testing.assert_array_equal(again.start, clean.start)


def test_charged_dispatch_time_is_replayed_exactly(case, tmp_path):
    path = tmp_path / "j.jsonl"
    first = run(case, make_dispatcher("cp-rule"), path, charge_dispatch_time=True)
    # starts carry the measured (hence run-specific) dispatch times; the replay reproduces them
    replayed = run(case, make_dispatcher("cp-rule"), path, charge_dispatch_time=True)
    assert replayed.notes.journal.recorded == 0
    np.testing.assert_array_equal(replayed.start, first.start)
    assert (first.start[~np.isnan(first.start)] % 1 != 0).any()  # really charged: not whole seconds


def test_cut_last_line_is_dropped_with_a_warning(case, tmp_path):
    path = tmp_path / "j.jsonl"
    interrupted(case, path, after=25)
    text = path.read_text()
    path.write_text(text[: len(text) - 7])  # the write of call 24 was cut short
    CountingHCP.calls = 0
    with pytest.warns(UserWarning, match="line 26 is incomplete"):
        resumed = run(case, hcp(counting=True), path)
    assert resumed.notes.journal.replayed == 24
    np.testing.assert_array_equal(resumed.start, run(case, hcp()).start)


def test_journal_of_another_run_is_refused(case, tmp_path):
    path = tmp_path / "j.jsonl"
    interrupted(case, path, after=5)
    with pytest.raises(JournalError, match="another run.*dispatcher"):
        run(case, HCP(delta=0.3, deterministic=True), path)


def test_journal_written_before_a_parameter_existed_resumes_at_its_default(case, tmp_path):
    """A parameter added to a dispatcher later (e.g. ``keep_blocked``) does not orphan the
    journals of long runs written before it, as long as the run keeps it at its default."""
    path = tmp_path / "j.jsonl"
    interrupted(case, path, after=5)
    lines = path.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    del header["run"]["dispatcher"]["params"]["keep_blocked"]
    path.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    CountingHCP.calls, CountingHCP.stop_after = 0, None
    resumed = run(case, hcp(counting=True), path)
    assert resumed.notes.journal.replayed == 5
    np.testing.assert_array_equal(resumed.start, run(case, hcp()).start)
    changed = HCP(delta=0.2, deterministic=True, keep_blocked=True)  # not the default: another run
    with pytest.raises(JournalError, match="another run.*dispatcher"):
        run(case, changed, path)


def without(identity, *keys):
    return {
        "name": identity["name"],
        "params": {k: v for k, v in identity["params"].items() if k not in keys},
    }


def test_dispatcher_identities_match_by_name_values_and_added_parameters():
    d = make_dispatcher("hcp:version=1")
    old = without(d.identity(), "keep_blocked")
    assert d.matches_identity(d.identity()) and d.matches_identity(old)
    assert not d.matches_identity({**old, "params": {**old["params"], "k": 3}})  # a value differs
    assert not d.matches_identity({**old, "name": "pcp19"})  # another dispatcher
    assert not d.matches_identity(
        {**old, "params": {**old["params"], "extra": 1}}
    )  # a parameter it does not have
    assert not make_dispatcher("hcp:version=1,keep_blocked=true").matches_identity(old)
    # an identity lacking both added parameters: only their values as added match
    older = without(make_dispatcher("hcp").identity(), "keep_blocked", "reserve")
    assert make_dispatcher("hcp").matches_identity(older)
    assert not make_dispatcher("hcp:reserve=1").matches_identity(older)
    assert not make_dispatcher("easy").matches_identity(
        {"name": "easy", "params": {}}
    )  # allocator was never added later
    assert not d.matches_identity(d.describe())  # printed text is not an identity


def test_a_journal_of_the_old_format_is_refused_with_a_clear_message(case, tmp_path):
    path = tmp_path / "j.jsonl"
    interrupted(case, path, after=5)
    lines = path.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["journal"] = 1
    header["run"]["dispatcher"] = make_dispatcher(
        "hcp"
    ).describe()  # format 1 stored the printed text
    path.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    with pytest.raises(
        JournalError, match=r"line 1: a decision journal of format 1; this version reads format 2"
    ):
        run(case, hcp(), path)


def test_diverging_record_names_line_and_field(case, tmp_path):
    path = tmp_path / "j.jsonl"
    interrupted(case, path, after=10)
    lines = path.read_text().splitlines()
    rec = json.loads(lines[4])  # call 3
    rec["t"] += 1.0
    lines[4] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(JournalError, match=r"line 5: field 't'"):
        run(case, hcp(), path)


def test_damaged_record_in_the_middle_is_an_error(case, tmp_path):
    path = tmp_path / "j.jsonl"
    interrupted(case, path, after=10)
    lines = path.read_text().splitlines()
    lines[3] = lines[3][:20]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(JournalError, match="line 4: damaged record"):
        run(case, hcp(), path)


def _renamed(rec):
    rec["time"] = rec.pop("t")


def _node_twice(rec):
    start = rec["starts"][0]
    start[2], start[3] = [start[2][0], start[2][0]], [1, 1]


def _index_as_text(rec):
    rec["starts"][0][0] = str(rec["starts"][0][0])


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (_renamed, r"field 't': missing \(a record has k, t, queue"),
        (_node_twice, r"field 'starts': entry 0 \(job \d+\) lists a node twice: \[(\d+), \1\]"),
        (
            _index_as_text,
            r"field 'starts': entry 0 must be \[job index, job id, \[nodes\], \[units\]\]",
        ),
        (lambda rec: rec.update(elapsed="slow"), r"field 'elapsed': must be seconds"),
        (lambda rec: rec.update(wakeup=[1]), r"field 'wakeup': must be a time or null"),
        (lambda rec: rec.update(info=[1, 2]), r"field 'info': must be an object or null"),
    ],
)
def test_a_record_of_the_wrong_form_names_file_line_and_field(case, tmp_path, edit, expected):
    path = tmp_path / "j.jsonl"
    run(case, make_dispatcher("fifo"), path)  # a complete journal of a memoryless dispatcher
    lines = path.read_text().splitlines()
    n = next(i for i, line in enumerate(lines[1:], start=1) if json.loads(line)["starts"])
    rec = json.loads(lines[n])
    edit(rec)
    lines[n] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(JournalError, match=rf"^{re.escape(str(path))}, line {n + 1}, {expected}"):
        run(case, make_dispatcher("fifo"), path)


def test_a_journal_that_is_not_text_names_file_and_line(case, tmp_path):
    path = tmp_path / "j.jsonl"
    run(case, make_dispatcher("fifo"), path)
    lines = path.read_bytes().split(b"\n")
    lines[4] = lines[4][:10] + b"\xff" + lines[4][10:]
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(
        JournalError, match=rf"{re.escape(str(path))}, line 5: damaged record \(not UTF-8 text\)"
    ):
        run(case, make_dispatcher("fifo"), path)
    path.write_bytes(b"\xff\xfe" + bytes(100) + b"\n")
    with pytest.raises(JournalError, match="line 1: not a decision journal header"):
        run(case, make_dispatcher("fifo"), path)
    with pytest.raises(JournalError, match="is a directory"):
        run(case, make_dispatcher("fifo"), tmp_path)


def test_a_file_that_is_not_this_runs_journal_is_left_as_it_was(tmp_path):
    from hpcdispatch.sim.journal import DecisionJournal

    path = tmp_path / "notes.txt"
    path.write_bytes(b"some notes\nwithout a last newline")
    with pytest.raises(JournalError, match="line 1: not a decision journal header"):
        DecisionJournal(path, {"run": 1})
    other = tmp_path / "other.jsonl"
    DecisionJournal(other, {"run": 2}).close()
    other.write_bytes(other.read_bytes() + b'{"k": 0, "t"')
    before = other.read_bytes()
    with pytest.raises(JournalError, match="another run"):
        DecisionJournal(other, {"run": 1})
    assert (
        path.read_bytes() == b"some notes\nwithout a last newline" and other.read_bytes() == before
    )


def test_dispatcher_with_memory_cannot_be_journaled(case, tmp_path):
    system, wl = case
    with pytest.raises(ConfigError, match="cannot resume from a journal"):
        Simulator(system, wl, make_dispatcher("conservative"), journal=tmp_path / "j.jsonl")


def test_journal_off_by_default_writes_nothing(case, tmp_path):
    result = run(case, make_dispatcher("fifo"))
    assert result.notes.journal is None and "journal" not in summarize(result)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(case, make_dispatcher("fifo"), tmp_path / "f.jsonl")
        run(case, make_dispatcher("fifo"), tmp_path / "f.jsonl")


def test_a_journal_in_use_is_refused_and_released_after(case, tmp_path):
    from hpcdispatch.sim.journal import DecisionJournal

    path = tmp_path / "j.jsonl"
    first = DecisionJournal(path, {"run": 1})
    with pytest.raises(JournalError, match="in use by another process"):
        DecisionJournal(path, {"run": 1})
    first.close()
    DecisionJournal(path, {"run": 1}).close()  # free again
    with pytest.raises(JournalError, match="another run"):
        DecisionJournal(path, {"run": 2})
    DecisionJournal(path, {"run": 1}).close()  # a refused open released its lock
