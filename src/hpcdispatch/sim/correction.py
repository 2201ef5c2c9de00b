"""Prediction correction: what a running job that outlived its predicted end is expected to need.

Without correction (the papers' behaviour, CP'19 version 2's under-estimation fix), a job
past its predicted end is expected to end in the next second (``max(planned end, now + 1)``
in :class:`~hpcdispatch.protocol.view.DispatchView`, ``max(1, s + d - t)`` in the CP models).
With a predictor that under-estimates often (last-two, data-driven), that keeps a
reservation "one second away" for as long as the job keeps running: nothing may be
backfilled into resources the reservation is about to use, and the machine idles.
Tsafrir, Etsion and Feitelson (IEEE TPDS 18(6), 2007) correct such predictions when they
are proven wrong; the simulator does so when ``SimulationOptions.prediction_correction`` is
set, at the instant the prediction expires (an event: the dispatcher is called, since the
plan changed):

- ``"walltime"``: the new planned end is the job's wall-time end ``start + wall-time`` (a
  hard bound when jobs are killed at their wall-time);
- ``"ladder"``: the prediction grows by steps of 1 min, 5 min, 15 min, 30 min, 1 h, 2 h,
  5 h, 10 h, 20 h, 50 h, 100 h (the last step repeats) past the expired end, never beyond
  the wall-time end while that is still ahead.

When the job outlives its wall-time end too (only without wall-time kills) there is no
bound left: both then grow it by the ladder's steps, from the step its number of revisions
so far has reached (``walltime``'s first step past the wall-time end is 5 min).
"""

from __future__ import annotations

CORRECTIONS = ("walltime", "ladder")

#: growth of a prediction after its ``k``-th expiry (seconds); the last step repeats
LADDER_S = (
    60.0,
    300.0,
    900.0,
    1800.0,
    3600.0,
    7200.0,
    18000.0,
    36000.0,
    72000.0,
    180000.0,
    360000.0,
)


def check_correction(name: str | None) -> None:
    from hpcdispatch.errors import ConfigError

    if name is not None and name not in CORRECTIONS:
        raise ConfigError(
            f"prediction_correction must be one of {', '.join(CORRECTIONS)} (or unset), got '{name}'"
        )


def revised_end(name: str, now: float, start: float, wall_time: float, revisions: int) -> float:
    """The new planned end of a job whose planned end ``now`` just passed, after ``revisions``
    earlier revisions of the same job. Always later than ``now``."""
    wall_end = start + wall_time
    if name == "walltime" and wall_end > now:
        return wall_end
    step = LADDER_S[min(revisions, len(LADDER_S) - 1)]
    end = now + step
    if wall_end > now:
        end = min(end, wall_end)
    return end
