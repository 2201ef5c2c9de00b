"""Jobs, workloads and their sources: trace readers and writers, and the generators.

- the model: :class:`Job`, :class:`Workload` (its jobs as numpy columns), :class:`AppSpec`,
  :class:`GrowthRequest`, :class:`SkipReport`, :class:`WorkloadSource`, :class:`UnitMapping`
  (processors -> units; ``UNIT_MODES`` are its modes);
- one entry point: :class:`WorkloadSpec` (what a user writes, parsed once),
  :func:`load_workload` and :func:`resolve_system` (the system that goes with it);
- SWF traces (``SWF_FIELDS``: the 18 field names): :func:`load_swf`, :func:`read_swf_header`, :func:`read_swf_records`,
  :func:`write_swf`; Slurm: :class:`SlurmRequest`, :func:`read_slurm_requests`,
  :func:`read_sacct`, and Slurm's spellings of times, memory, GRES and TRES; Batsim workloads
  (JSON): :func:`read_batsim`, :func:`is_batsim_workload`, :func:`batsim_workload_text`;
- generators (``synthetic:NAME``): :class:`LublinSpec`, :class:`KitSpec`,
  :class:`EuroraSpec`, :class:`AucschedSpec` (its mixes ``WORKLOAD_MIXES`` and versions
  ``CONTIGUOUS_FRACTION``), and deadline jobs, :class:`DeadlineWorkloadParams` (the values of
  its axes: ``LOADS``, ``TYPES``, ``COMMS``).
"""

from hpcdispatch.workload.batsim import batsim_workload_text, is_batsim_workload, read_batsim
from hpcdispatch.workload.deadline import (
    COMMS,
    LOADS,
    TYPES,
    DeadlineWorkloadParams,
    deadline_columns,
    deadline_job,
    parse_deadline_spec,
    read_deadline_jsonl,
    write_deadline_jsonl,
)
from hpcdispatch.workload.eurora import EuroraSpec
from hpcdispatch.workload.job import (
    AppSpec,
    GrowthRequest,
    Job,
    SkipReport,
    Workload,
    WorkloadSource,
    make_job,
)
from hpcdispatch.workload.kit import KitSpec
from hpcdispatch.workload.loader import load_workload, resolve_system, workload_from_source
from hpcdispatch.workload.lublin import LublinSpec, lublin_jobs, walltime_estimates
from hpcdispatch.workload.mapping import UNIT_MODES, UnitMapping
from hpcdispatch.workload.sacct import is_sacct_file, read_sacct
from hpcdispatch.workload.slurm import (
    CONTIGUOUS_FRACTION,
    WORKLOAD_MIXES,
    AucschedSpec,
    SlurmRequest,
    aucsched_requests,
    read_slurm_requests,
    request_of,
    slurm_job,
    slurm_requests_text,
    theoretical_runtime,
    write_slurm_requests,
)
from hpcdispatch.workload.slurm_units import (
    format_slurm_time,
    gres_resource,
    parse_gres,
    parse_slurm_memory,
    parse_slurm_time,
    parse_tres,
)
from hpcdispatch.workload.spec import WorkloadSpec
from hpcdispatch.workload.swf import _SWF_FIELDS as SWF_FIELDS  # noqa: E402
from hpcdispatch.workload.swf import (
    SwfHeader,
    SwfOptions,
    SwfRecords,
    fits_empty_system,
    load_swf,
    read_swf_header,
    read_swf_records,
    swf_text,
    system_from_swf_header,
    write_swf,
)

__all__ = [
    "AppSpec",
    "AucschedSpec",
    "COMMS",
    "CONTIGUOUS_FRACTION",
    "DeadlineWorkloadParams",
    "EuroraSpec",
    "GrowthRequest",
    "Job",
    "KitSpec",
    "LOADS",
    "LublinSpec",
    "SWF_FIELDS",
    "SkipReport",
    "SlurmRequest",
    "SwfHeader",
    "SwfOptions",
    "SwfRecords",
    "TYPES",
    "UNIT_MODES",
    "UnitMapping",
    "WORKLOAD_MIXES",
    "Workload",
    "WorkloadSource",
    "WorkloadSpec",
    "aucsched_requests",
    "batsim_workload_text",
    "deadline_columns",
    "deadline_job",
    "fits_empty_system",
    "format_slurm_time",
    "gres_resource",
    "is_batsim_workload",
    "is_sacct_file",
    "load_swf",
    "load_workload",
    "lublin_jobs",
    "make_job",
    "parse_deadline_spec",
    "parse_gres",
    "parse_slurm_memory",
    "parse_slurm_time",
    "parse_tres",
    "read_batsim",
    "read_deadline_jsonl",
    "read_sacct",
    "read_slurm_requests",
    "read_swf_header",
    "read_swf_records",
    "request_of",
    "resolve_system",
    "slurm_job",
    "slurm_requests_text",
    "swf_text",
    "system_from_swf_header",
    "theoretical_runtime",
    "walltime_estimates",
    "workload_from_source",
    "write_deadline_jsonl",
    "write_slurm_requests",
    "write_swf",
]
