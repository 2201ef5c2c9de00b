"""Metrics: per-job QoS (wait, slowdown, bounded slowdown, turnaround) and run summaries.

``BSLD_TAU`` is the bounded slowdown's threshold (10 s): run times below it count as it.
"""

from hpcdispatch.metrics.jobs import BSLD_TAU, bounded_slowdowns, job_metrics, slowdowns, wait_times
from hpcdispatch.metrics.summary import describe, queue_length_profile, summarize, utilization

__all__ = [
    "BSLD_TAU",
    "bounded_slowdowns",
    "describe",
    "job_metrics",
    "queue_length_profile",
    "slowdowns",
    "summarize",
    "utilization",
    "wait_times",
]
