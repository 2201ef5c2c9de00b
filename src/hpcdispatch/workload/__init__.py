"""Jobs, workloads and their sources: SWF traces and the Lublin-Feitelson generator."""

from hpcdispatch.workload.job import (
    GrowthRequest,
    Job,
    SkipReport,
    Workload,
    WorkloadSource,
    make_job,
)
from hpcdispatch.workload.loader import load_workload, resolve_system
from hpcdispatch.workload.mapping import UnitMapping
from hpcdispatch.workload.swf import SwfOptions, load_swf, read_swf_header, system_from_swf_header

__all__ = [
    "GrowthRequest",
    "Job",
    "SkipReport",
    "SwfOptions",
    "UnitMapping",
    "Workload",
    "WorkloadSource",
    "load_swf",
    "load_workload",
    "make_job",
    "read_swf_header",
    "resolve_system",
    "system_from_swf_header",
]
