"""Settings shared by the test modules.

Hypothesis runs without its per-example deadline (200 ms) and without its "too slow" health
check in every test (the ``hpcdispatch`` profile, loaded here before the test modules make
their own settings, which inherit it): both time the examples, and on a loaded machine they
fail tests whose results are right. The tests check results; speed is for benchmarks/.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "hpcdispatch", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("hpcdispatch")
