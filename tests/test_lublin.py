"""The Lublin-Feitelson generator and the wall-time model."""

from __future__ import annotations

import numpy as np
import pytest

from hpcdispatch.errors import ConfigError
from hpcdispatch.system import load_system
from hpcdispatch.workload import load_workload
from hpcdispatch.workload.lublin import walltime_estimates


def test_same_seed_same_workload_other_seed_other():
    s = load_system("machine-s")
    a = load_workload("synthetic:lublin,jobs=500,seed=4", s)
    b = load_workload("synthetic:lublin,jobs=500,seed=4", s)
    c = load_workload("synthetic:lublin,jobs=500,seed=5", s)
    assert a.jobs == b.jobs and a.jobs != c.jobs


def test_shape_of_the_model():
    s = load_system("machine-s")  # 1024 cores
    wl = load_workload("synthetic:lublin,jobs=5000,seed=1", s)
    procs = wl.units * wl.unit_requests[:, 0]
    assert procs.min() >= 1 and procs.max() <= 1024
    serial = (procs == 1).mean()
    assert 0.15 < serial < 0.35  # serial fractions 0.15 (interactive) / 0.29 (batch)
    pow2 = np.isin(procs[procs > 1], 2 ** np.arange(11)).mean()
    assert pow2 > 0.6
    assert (wl.run_time >= 1).all() and wl.run_time.max() <= np.exp(12)
    # daily cycle: more submissions between 8:00 and 18:00 than between 0:00 and 6:00
    hour = (wl.submit % 86400) // 3600
    assert ((hour >= 8) & (hour < 18)).sum() > 2 * ((hour >= 0) & (hour < 6)).sum()


def test_load_targets_the_offered_load():
    s = load_system("machine-s")
    wl = load_workload("synthetic:lublin,jobs=3000,seed=2,load=0.75", s)
    assert wl.offered_load(s.total_capacity)[0] == pytest.approx(0.75, rel=0.01)


def test_walltimes_overestimate_and_never_undercut():
    rng = np.random.default_rng(0)
    run = rng.integers(1, 100000, size=5000)
    wall = walltime_estimates(run, rng)
    assert (wall >= run).all()
    assert np.median(wall / run) > 2
    assert (wall == 172800).mean() > 0.1


def test_bad_specs_are_clear():
    s = load_system("machine-s")
    with pytest.raises(ConfigError, match="unknown synthetic model 'poisson'"):
        load_workload("synthetic:poisson,jobs=10", s)
    with pytest.raises(ConfigError, match="'jobs' must be int"):
        load_workload("synthetic:lublin,jobs=ten", s)
    with pytest.raises(ConfigError, match="unknown key"):
        load_workload("synthetic:lublin,njobs=10", s)
