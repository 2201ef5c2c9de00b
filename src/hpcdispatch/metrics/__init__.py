"""Metrics: per-job QoS (wait, slowdown, bounded slowdown, turnaround) and run summaries.

``BSLD_TAU`` is the bounded slowdown's threshold (10 s): run times below it count as it.
"""

from hpcdispatch.metrics.classes import JobClasses, class_means, run_time_classes, size_classes
from hpcdispatch.metrics.jobs import BSLD_TAU, bounded_slowdowns, job_metrics, slowdowns, wait_times
from hpcdispatch.metrics.summary import (
    core_resource,
    describe,
    queue_length_profile,
    repeatable,
    summarize,
    utilization,
)

__all__ = [
    "BSLD_TAU",
    "JobClasses",
    "class_means",
    "core_resource",
    "repeatable",
    "run_time_classes",
    "size_classes",
    "bounded_slowdowns",
    "describe",
    "job_metrics",
    "queue_length_profile",
    "slowdowns",
    "summarize",
    "utilization",
    "wait_times",
]
