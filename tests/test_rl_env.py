"""hpcdispatch/Scheduling-v0: the Gymnasium contract, episodes of every workload family as
valid runs, determinism, the fast engine against the simulator, vector environments."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from hpcdispatch.errors import ConfigError
from hpcdispatch.rl import ENV_ID
from hpcdispatch.rl.env import SchedulingEnv
from hpcdispatch.validation import validate_result

HERE = Path(__file__).resolve().parent
SMALL = {"workload": "synthetic:lublin,jobs=120,seed=3", "system": "lublin-256"}


def play(env: SchedulingEnv, seed: int, policy_seed: int = 0, **reset_kw):
    """An episode with a seeded random masked policy: (observations, actions, reward, info)."""
    rng = np.random.default_rng(policy_seed)
    obs, info = env.reset(seed=seed, **reset_kw)
    seen, actions = [obs], []
    while True:
        valid = np.flatnonzero(info["action_mask"])
        a = int(valid[int(rng.integers(len(valid)))])
        obs, reward, term, trunc, info = env.step(a)
        seen.append(obs)
        actions.append(a)
        assert not trunc
        if term:
            return seen, actions, reward, info


def test_check_env_passes():
    env = SchedulingEnv(**SMALL, jobs=40, window=16)
    check_env(env, skip_render_check=True)


def test_registered_and_made_with_simulate_keywords():
    env = gym.make(ENV_ID, **SMALL, jobs=30, window=8, backfill="on", predictor="W")
    obs, info = env.reset(seed=5)
    assert obs.shape == (8, 5) and obs.dtype == np.float32
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].sum() >= 1
    assert env.unwrapped.action_masks().dtype == bool


def test_made_by_module_prefix_without_importing_the_package_first():
    # gymnasium 1.x has no plugin entry points; "module:env-id" imports the module first
    env = gym.make("hpcdispatch.rl:" + ENV_ID, **SMALL, jobs=10, window=4)
    assert env.reset(seed=0)[0].shape == (4, 5)


def test_same_seed_same_episode_and_another_seed_another():
    a = SchedulingEnv(**SMALL, jobs=50)
    b = SchedulingEnv(**SMALL, jobs=50)
    oa, acts_a, ra, _ = play(a, seed=11)
    ob, acts_b, rb, _ = play(b, seed=11)
    assert acts_a == acts_b and ra == rb
    assert all(np.array_equal(x, y) for x, y in zip(oa, ob))
    assert np.array_equal(a.result().start, b.result().start, equal_nan=True)
    firsts = {a.reset(seed=s)[0].tobytes() for s in range(5)}
    assert len(firsts) > 1  # different seeds draw different sequences


@pytest.mark.parametrize("backfill", ["off", "on", "rlscheduler"])
def test_the_fast_engine_takes_the_simulators_decisions(backfill):
    runs = {}
    for engine in ("fast", "simulator"):
        env = SchedulingEnv(**SMALL, jobs=100, backfill=backfill, engine=engine)
        assert env.engine == engine
        obs, acts, reward, info = play(env, seed=2, policy_seed=4)
        res = env.result()
        report = validate_result(res)
        assert report.ok, report.describe()
        runs[engine] = (obs, acts, reward, res.start)
    f, s = runs["fast"], runs["simulator"]
    assert f[1] == s[1] and f[2] == s[2]
    assert all(np.array_equal(x, y) for x, y in zip(f[0], s[0]))
    assert np.array_equal(f[3], s[3], equal_nan=True)


def test_the_reward_is_minus_the_mean_bounded_slowdown_by_hand():
    # two one-core nodes; starts by hand: J0 0-10, J1 waits until 10 (needs both)
    from helpers import cores_system, job

    from hpcdispatch.workload.job import Workload

    wl = Workload([job(0, 0, 10, units=1), job(1, 2, 4, units=2)], ("core",))
    env = SchedulingEnv(workload=wl, system=cores_system(2, 1), jobs=None, window=4)
    obs, info = env.reset(seed=0)
    assert info["action_mask"].tolist() == [1, 0, 0, 0]
    obs, r, term, _, info = env.step(0)  # J0 starts at 0; at t=2 J1 arrives
    assert not term
    # J1: waited 0 so far, requested 4 of the longest request 10, 2 of 2 cores, does not fit
    assert np.allclose(obs[0], [0.0, 0.4, 1.0, 0.0, 0.4])
    obs, r, term, _, info = env.step(0)
    assert term
    # bsld: J0 max((0+10)/10, 1) = 1; J1 (8 + 4) / max(4, 10) = 1.2
    assert r == pytest.approx(-(1.0 + 1.2) / 2)
    assert info["mean_wait"] == pytest.approx(4.0)
    assert info["utilization"] == pytest.approx((10 + 8) / (14 * 2))


def test_a_masked_action_changes_nothing():
    env = SchedulingEnv(**SMALL, jobs=30, window=16)
    obs, info = env.reset(seed=1)
    padding = int(np.flatnonzero(info["action_mask"] == 0)[0])
    obs2, r, term, trunc, info2 = env.step(padding)
    assert info2["invalid_action"] and r == 0 and not term
    assert np.array_equal(obs, obs2) and env.invalid_actions == 1
    with pytest.raises(ConfigError, match="reward must be one of"):
        SchedulingEnv(**SMALL, reward="makespan")


def _tiny_swf(path: Path) -> Path:
    lines = ["; MaxNodes: 8", "; MaxProcs: 8"]
    for i in range(30):
        lines.append(
            f"{i + 1} {i * 20} -1 {50 + 7 * i % 90} {1 + i % 8} -1 -1 {1 + i % 8} 200 -1 1 1 1 1 1 1 -1 -1"
        )
    path.write_text("\n".join(lines) + "\n")
    return path


FAMILIES = {
    "swf": lambda tmp: {"workload": str(_tiny_swf(tmp / "t.swf")), "system": "auto"},
    "swf-rlscheduler": lambda tmp: {
        "workload": str(_tiny_swf(tmp / "t.swf")),
        "cleaning": "rlscheduler",
    },
    "lublin": lambda tmp: {"workload": "synthetic:lublin,jobs=40,seed=1"},
    "kit": lambda tmp: {"workload": "synthetic:kit,jobs=30,seed=1"},
    "eurora": lambda tmp: {"workload": "synthetic:eurora,jobs=30,seed=1"},
    "aucsched": lambda tmp: {
        "workload": "synthetic:aucsched,workload=I,version=3,seed=1,runtime_h=0.2"
    },
    "deadline": lambda tmp: {"workload": "synthetic:deadline,jobs=15,seed=1"},
    "slurm-csv": lambda tmp: {
        "workload": str(HERE.parent / "examples" / "jobs.csv"),
        "system": "machine-s",
    },
    "sacct": lambda tmp: {
        "workload": str(HERE / "data" / "slurm" / "cluster-jan.sacct"),
        "system": "machine-s",
    },
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("backfill", ["off", "on"])
def test_every_workload_family_runs_to_the_end_as_a_valid_run(family, backfill, tmp_path):
    env = SchedulingEnv(**FAMILIES[family](tmp_path), jobs=25, window=8, backfill=backfill)
    obs, acts, reward, info = play(env, seed=3)
    assert reward <= -1.0  # minus a mean bounded slowdown
    res = env.result()
    report = validate_result(res)
    assert report.ok, report.describe()
    started = set(np.flatnonzero(~np.isnan(res.start)).tolist())
    assert started | set(res.cancel_reason) == set(range(len(res.workload)))  # no job lost


def test_an_episode_written_as_a_run_directory_validates_and_is_reported(tmp_path):
    from hpcdispatch.results import write_result
    from hpcdispatch.validation import validate_run_dir

    env = SchedulingEnv(**SMALL, jobs=40, backfill="on")
    play(env, seed=9)
    write_result(env.result(), tmp_path / "run")
    report = validate_run_dir(tmp_path / "run")
    assert report.ok, report.describe()
    # and `hpcdispatch report` draws it
    from click.testing import CliRunner

    from hpcdispatch.cli.main import cli

    res = CliRunner().invoke(cli, ["report", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "run" / "report" / "report.html").stat().st_size > 1000


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_vector_environments(kind):
    make = [lambda: gym.make(ENV_ID, **SMALL, jobs=12, window=8) for _ in range(2)]
    vec = gym.vector.SyncVectorEnv(make) if kind == "sync" else gym.vector.AsyncVectorEnv(make)
    try:
        obs, info = vec.reset(seed=[1, 2])
        assert obs.shape == (2, 8, 5) and info["action_mask"].shape == (2, 8)
        rng = np.random.default_rng(0)
        ended = 0
        for _ in range(60):
            acts = []
            for mask in info["action_mask"]:
                valid = np.flatnonzero(mask)
                acts.append(int(valid[int(rng.integers(len(valid)))]) if len(valid) else 0)
            obs, rew, term, trunc, info = vec.step(np.array(acts))
            ended += int(term.sum())
            if ended >= 2:
                break
        assert ended >= 2
    finally:
        vec.close()
