"""Metrics: per-job QoS (wait, slowdown, bounded slowdown, turnaround) and run summaries.

``BSLD_TAU`` is the bounded slowdown's threshold (10 s): run times below it count as it.
"""

from hpcdispatch.metrics.classes import JobClasses, class_means, run_time_classes, size_classes
from hpcdispatch.metrics.jobs import BSLD_TAU, bounded_slowdowns, job_metrics, slowdowns, wait_times
from hpcdispatch.metrics.summary import (
    RunSummary,
    core_resource,
    cp_outcomes,
    describe,
    queue_length_profile,
    repeatable,
    summarize,
    summary_unit,
    utilization,
)

__all__ = [
    "BSLD_TAU",
    "JobClasses",
    "RunSummary",
    "bounded_slowdowns",
    "class_means",
    "core_resource",
    "cp_outcomes",
    "describe",
    "job_metrics",
    "queue_length_profile",
    "repeatable",
    "run_time_classes",
    "size_classes",
    "slowdowns",
    "summarize",
    "summary_unit",
    "utilization",
    "wait_times",
]
