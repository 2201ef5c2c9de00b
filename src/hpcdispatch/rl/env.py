"""``hpcdispatch/Scheduling-v0``: a Gymnasium environment on the simulator.

One step is one dispatch decision: the agent picks one job from a window of the first
``window`` queued jobs (padding masked out), and the pick behaves as in every pick
dispatcher (:mod:`hpcdispatch.dispatchers.pick`), with ``backfill`` off, ``on`` (EASY) or
``rlscheduler``. The simulation is the project's own simulator driven one dispatcher call at
a time; :meth:`SchedulingEnv.result` returns the episode as an ordinary run that
:func:`hpcdispatch.validate` accepts and ``hpcdispatch report`` draws.

Observation ``(window, 5)`` float32 in [0, 1] (wait, requested time, processors, fits now,
predicted duration); action ``Discrete(window)`` with ``info["action_mask"]`` and
:meth:`SchedulingEnv.action_masks`; reward at the episode's end: minus the mean bounded
slowdown (or wait, response time; or the utilisation); ``reset(seed=...)`` draws ``jobs``
consecutive jobs, the same seed the same episode. Detail: docs/RESULTS-RL.md, "The
environment".
"""

from __future__ import annotations

from dataclasses import replace
from itertools import islice
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hpcdispatch.dispatchers.pick import PickBase, requested_processors
from hpcdispatch.dispatchers.policy import (
    DEFAULT_WAIT_SCALE,
    DEFAULT_WINDOW,
    N_FEATURES,
    job_features,
)
from hpcdispatch.errors import ConfigError, SimulationStalledError
from hpcdispatch.predictors import make_predictor
from hpcdispatch.protocol import Decision, DispatchView, Scratch, Start
from hpcdispatch.rl.fast import FastEpisode, Replay, fast_eligible
from hpcdispatch.rl.sequences import CLEANING_PROFILES, job_slice, load_rlscheduler
from hpcdispatch.sim import SimulationOptions, SimulationResult, Simulator
from hpcdispatch.system.allocation import job_fits
from hpcdispatch.system.model import System
from hpcdispatch.workload.job import Workload

REWARDS = ("bsld", "wait", "response", "utilization")
BSLD_THRESHOLD = 10.0


class AgentPick(PickBase):
    """The environment's dispatcher: it starts the pick the agent gave (kept until it fits)
    and otherwise starts nothing, so that the environment asks the agent."""

    name = "rl-agent"

    def _dispatch(self, view: DispatchView) -> Decision | list[Start]:
        head = self.kept_pick(view)
        if head is None:
            return []
        scratch = Scratch(view, self._allocator)
        if not self.try_pick(view, scratch, head):
            self.backfill_around(view, scratch, head)
            return Decision(starts=scratch.starts, wakeup=self.wakeup_for(view, head))
        return scratch.starts


def load_episode_source(
    workload: str | Workload, system: str | System, cleaning: str
) -> tuple[System, Workload]:
    """The system and the whole workload episodes are drawn from."""
    from hpcdispatch.system.io import load_system
    from hpcdispatch.workload.loader import load_workload, resolve_system

    if cleaning not in CLEANING_PROFILES:
        raise ConfigError(
            f"cleaning must be one of {', '.join(CLEANING_PROFILES)}, got '{cleaning}'"
        )
    if cleaning == "rlscheduler":
        if not isinstance(workload, str):
            raise ConfigError("cleaning='rlscheduler' reads an SWF trace: give its path")
        sys_, wl = load_rlscheduler(workload)
        if isinstance(system, System):
            sys_ = system
        elif system not in ("auto", "from-trace", "rlscheduler"):
            sys_ = load_system(system)
        return sys_, wl
    if isinstance(workload, Workload):
        if not isinstance(system, System):
            raise ConfigError("a Workload object needs a System object")
        return system, workload
    sys_ = system if isinstance(system, System) else resolve_system(system, workload)
    return sys_, load_workload(workload, sys_)


class SchedulingEnv(gym.Env[np.ndarray, np.int64]):
    """Pick one job of the window per step (see the module docstring)."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        workload: str | Workload = "synthetic:lublin,jobs=2000,seed=1",
        system: str | System = "auto",
        jobs: int | None = 1024,
        window: int = DEFAULT_WINDOW,
        backfill: str = "off",
        reward: str = "bsld",
        predictor: str = "W",
        cleaning: str = "none",
        walltime_kill: bool = True,
        allocator: str = "first-fit",
        wait_scale: float = DEFAULT_WAIT_SCALE,
        time_scale: float | None = None,
        engine: str = "auto",
    ):
        if reward not in REWARDS:
            raise ConfigError(f"reward must be one of {', '.join(REWARDS)}, got '{reward}'")
        if window < 1 or (jobs is not None and jobs < 1):
            raise ConfigError("window and jobs must be >= 1")
        self.system, self.workload = load_episode_source(workload, system, cleaning)
        if len(self.workload) == 0:
            raise ConfigError("the workload has no jobs")
        self.jobs = len(self.workload) if jobs is None else min(jobs, len(self.workload))
        self.window = window
        self.backfill = backfill
        self.reward_kind = reward
        self.predictor = predictor
        self.options = SimulationOptions(walltime_kill=walltime_kill, engine="python")
        self.allocator = allocator
        w = self.workload
        self._submit_all = w.submit.astype(np.float64)
        self._wall_all = w.wall_time.astype(np.float64)
        self._procs_all = np.fromiter(
            (requested_processors(j) for j in w.jobs), dtype=np.float64, count=len(w)
        )
        self._need_all = w.unit_requests * w.units[:, None]
        self.wait_scale = float(wait_scale)
        self.time_scale = float(time_scale or max(float(self._wall_all.max()), 1.0))
        self.total_processors = float(max(int(self.system.capacity[:, 0].sum()), 1))
        self._pooled_exact = (
            len(self.system.resources) == 1
            and int(self.system.capacity.max()) <= 1
            and not w.has_constraints
        )
        if engine not in ("auto", "fast", "simulator"):
            raise ConfigError(f"engine must be auto, fast or simulator, got '{engine}'")
        why = fast_eligible(self.system, w, predictor)
        if engine == "fast" and why is not None:
            raise ConfigError(f"the fast engine cannot run these episodes: {why}")
        #: "fast" (pooled counts, replayed through the simulator for result()) or "simulator"
        self.engine = "fast" if engine != "simulator" and why is None else "simulator"
        self._duration_all = (
            np.minimum(w.run_time, w.wall_time) if walltime_kill else w.run_time
        ).astype(np.float64)
        self._units_all = w.units.astype(np.int64)
        self.action_space = spaces.Discrete(window)
        self.observation_space = spaces.Box(0.0, 1.0, (window, N_FEATURES), dtype=np.float32)
        self._sim: Simulator | None = None
        self._fast: FastEpisode | None = None
        self._episode: Workload | None = None
        self._done = True
        self._result: SimulationResult | None = None
        self._mask = np.zeros(window, dtype=np.int8)

    # ---- the episode -----------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        n, length = len(self.workload), self.jobs
        if options and "start" in options:
            start = int(options["start"])
            if not 0 <= start <= n - length:
                raise ConfigError(f"start must be in 0..{n - length}, got {start}")
        else:
            start = int(self.np_random.integers(0, n - length + 1))
        self.first_job = start
        episode = job_slice(self.workload, start, length)
        sl = slice(start, start + length)
        self._submit = self._submit_all[sl]
        self._wall = self._wall_all[sl]
        self._procs = self._procs_all[sl]
        self._need = self._need_all[sl]
        self._units = self._units_all[sl]
        self._episode = episode
        self._result = None
        self._metrics: dict[str, float] | None = None
        self.invalid_actions = 0
        self.decisions = 0
        if self.engine == "fast":
            self._sim = None
            self._fast = FastEpisode(
                self._submit,
                self._duration_all[sl],
                self._wall,
                self._units,
                int(self.system.capacity[:, 0].sum()),
                self.backfill,
            )
            # the features that do not change during the episode, one row per job (as
            # job_features computes them), gathered with one indexing per observation
            st_ = np.empty((length, N_FEATURES))
            st_[:, 0] = self._submit
            np.minimum(self._wall / self.time_scale, 1.0, out=st_[:, 1])
            np.minimum(self._procs / self.total_processors, 1.0, out=st_[:, 2])
            st_[:, 3] = self._units
            np.minimum(self._wall / self.time_scale, 1.0, out=st_[:, 4])
            self._static = st_
            self._done = self._fast.run_to_decision()
            return self._observe()
        self._fast = None
        self._agent = AgentPick(backfill=self.backfill, allocator=self.allocator)
        self._sim = Simulator(
            self.system, episode, self._agent, make_predictor(self.predictor), self.options
        )
        self._sim.stall_check = False  # the agent decides between steps
        self._sim.begin()
        self._done = self._advance()
        return self._observe()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._episode is None or self._done:
            raise ConfigError("the episode has ended: call reset()")
        a = int(action)
        if not (0 <= a < self.window) or not self._mask[a]:
            self.invalid_actions += 1
            obs, info = self._observe()
            info["invalid_action"] = True
            return obs, 0.0, False, False, info
        self.decisions += 1
        fast = self._fast
        if fast is not None:
            fast.pick(int(self._window_idx[a]))
            self._done = fast.run_to_decision()
        else:
            assert self._sim is not None and self._sim.state is not None
            job = self._sim.state.queue[int(self._window_idx[a])]
            self._agent._head, self._agent._shadow = job, None
            self._sim.dispatch_now()
            self._done = self._advance()
        obs, info = self._observe()
        reward = 0.0
        if self._done:
            reward = self._final_reward(info)
        return obs, reward, self._done, False, info

    def action_masks(self) -> np.ndarray:
        """The valid actions as booleans (Stable-Baselines3's MaskablePPO convention)."""
        return self._mask.astype(bool)

    def result(self) -> SimulationResult:
        """The finished episode as an ordinary run (validate, write_result, report)."""
        if not self._done or self._episode is None:
            raise ConfigError("the episode has not ended yet")
        if self._result is None and self._fast is not None:
            self._result = self._replay(self._fast)
        assert self._result is not None
        return self._result

    def _replay(self, fast: FastEpisode) -> SimulationResult:
        """The fast episode's starts, made again by the simulator (every start checked)."""
        assert self._episode is not None
        replay = Replay(backfill=self.backfill, allocator=self.allocator)
        replay._log = list(fast.log)
        res = Simulator(
            self.system, self._episode, replay, make_predictor(self.predictor), self.options
        ).run()
        if not np.array_equal(res.start, np.asarray(fast.start), equal_nan=True):
            raise RuntimeError("rl fast engine: the simulator's replay started jobs at other times")
        res.notes = replace(res.notes, rl_episode=self._episode_record())
        return res

    def _episode_record(self) -> dict[str, Any]:
        return {
            "first_job": self.first_job,
            "jobs": self.jobs,
            "decisions": self.decisions,
            "invalid_actions": self.invalid_actions,
            "engine": self.engine,
        }

    # ---- inside --------------------------------------------------------------------------
    def _advance(self) -> bool:
        """Run the simulation to the next decision (a queued job, no pick pending); True at
        the end of the episode."""
        sim = self._sim
        assert sim is not None
        st = sim.state
        assert st is not None
        agent = self._agent
        step = sim.step
        while not (st.queue and agent._head is None):
            if not step():
                if st.queue:
                    raise SimulationStalledError(
                        f"rl environment: {len(st.queue)} job(s) queued at t={st.t:g} with "
                        "nothing running and no event left"
                    )
                self._result = st.result(
                    sim.system, sim.workload, sim.dispatcher, sim.predictor, sim.options
                )
                self._result.notes = replace(
                    self._result.notes, engine="python", rl_episode=self._episode_record()
                )
                return True
        return False

    def _observe(self) -> tuple[np.ndarray, dict[str, Any]]:
        obs = np.zeros((self.window, N_FEATURES), dtype=np.float32)
        mask = self._mask
        mask[:] = 0
        if self._done:
            self._window_idx = np.zeros(0, dtype=np.int64)
            return obs, {"action_mask": mask.copy()}
        fast = self._fast
        if fast is not None:
            fq = fast.queue
            m = min(len(fq), self.window)
            idx = np.fromiter(islice(fq, m), dtype=np.int64, count=m)
            self._window_idx = idx
            rows = self._static[idx]
            wait = np.subtract(fast.t, rows[:, 0])
            wait /= self.wait_scale
            np.minimum(wait, 1.0, out=wait)
            rows[:, 0] = wait
            rows[:, 3] = rows[:, 3] <= fast.free
            obs[:m] = rows
            mask[:m] = 1
            return obs, {"action_mask": mask.copy(), "time": fast.t, "queued": len(fq)}
        sim = self._sim
        assert sim is not None
        st = sim.state
        assert st is not None
        queue = st.queue
        m = min(len(queue), self.window)
        idx = np.fromiter(islice(queue, m), dtype=np.int64, count=m)
        self._window_idx = idx
        view = st.view
        free_total = view._free_total
        need = self._need[idx]
        fits = (need <= np.asarray(free_total)[None, :]).all(axis=1)
        if not self._pooled_exact:
            for k in np.flatnonzero(fits).tolist():
                job = queue[int(idx[k])]
                fits[k] = job_fits(view.free, job, view.requests[job.index])
        job_features(
            st.t,
            self._submit[idx],
            self._wall[idx],
            self._procs[idx],
            view.planned_durations[idx],
            fits,
            self.total_processors,
            self.wait_scale,
            self.time_scale,
            out=obs,
        )
        mask[:m] = 1
        return obs, {"action_mask": mask.copy(), "time": st.t, "queued": len(queue)}

    def metrics(self) -> dict[str, float]:
        """The finished episode's mean bounded slowdown, wait, response time, utilisation."""
        if not self._done or self._episode is None:
            raise ConfigError("the episode has not ended yet")
        if self._metrics is None:
            if self._fast is not None:
                start, end = np.asarray(self._fast.start), np.asarray(self._fast.end)
            else:
                res = self.result()
                start, end = res.start, res.end
            self._metrics = episode_metrics(
                self._submit, start, end, self._procs, self.total_processors
            )
        return self._metrics

    def _final_reward(self, info: dict[str, Any]) -> float:
        metrics = self.metrics()
        info.update(metrics)
        info["invalid_actions"] = self.invalid_actions
        if self.reward_kind == "bsld":
            return -metrics["mean_bounded_slowdown"]
        if self.reward_kind == "wait":
            return -metrics["mean_wait"]
        if self.reward_kind == "response":
            return -metrics["mean_response"]
        return metrics["utilization"]


def episode_metrics(
    submit: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    procs: np.ndarray,
    total_processors: float,
) -> dict[str, float]:
    """Mean bounded slowdown (10 s), wait and response time of the jobs that ran, and the
    utilisation: processor-seconds used over (last end - first submit) x processors."""
    ran = ~np.isnan(start)
    sub = submit[ran]
    start, end = start[ran], end[ran]
    wait = start - sub
    run = end - start
    bsld = np.maximum((wait + run) / np.maximum(run, BSLD_THRESHOLD), 1.0)
    span = float(end.max() - sub.min()) if ran.any() else 0.0
    util = float((run * procs[ran]).sum() / (span * total_processors)) if span > 0 else 0.0
    return {
        "mean_bounded_slowdown": float(bsld.mean()) if ran.any() else 0.0,
        "mean_wait": float(wait.mean()) if ran.any() else 0.0,
        "mean_response": float((wait + run).mean()) if ran.any() else 0.0,
        "utilization": util,
    }
