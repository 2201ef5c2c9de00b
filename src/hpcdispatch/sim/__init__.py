"""The simulator's Python engine and what it produces.

- :class:`Simulator` (simulator.py): the event loop, one handler per kind of event;
  :class:`LoopState` (state.py): everything the loop changes, named once;
  :class:`SimulationOptions` (options.py);
- :class:`ClusterState` (cluster.py): free capacity as numpy arrays, every start checked;
- :class:`SimulationResult` (result.py), :class:`SegmentLog` (segments.py), the decision
  log's per-call info (info_log.py);
- resuming an interrupted run: :class:`DecisionJournal` (journal.py), :class:`Checkpoint`
  (checkpoint.py); prediction correction (correction.py);
- ``ProgressCallback``: what :meth:`Simulator.run` calls with its progress.

The simulator imports the protocol (:mod:`hpcdispatch.protocol`), never a package of
policies. :func:`hpcdispatch.simulate` picks this engine or the compiled one.
"""

from hpcdispatch.sim.checkpoint import Checkpoint
from hpcdispatch.sim.cluster import ClusterState
from hpcdispatch.sim.execution import parse_app_model
from hpcdispatch.sim.info_log import InfoLog, NumericColumn
from hpcdispatch.sim.journal import DecisionJournal
from hpcdispatch.sim.options import SimulationOptions, resolve_options
from hpcdispatch.sim.result import SimulationResult, arrow_table, install_views
from hpcdispatch.sim.segments import SegmentLog
from hpcdispatch.sim.simulator import ProgressCallback, Simulator
from hpcdispatch.sim.state import DecisionLog, LoopState

__all__ = [
    "Checkpoint",
    "ClusterState",
    "DecisionJournal",
    "DecisionLog",
    "InfoLog",
    "LoopState",
    "NumericColumn",
    "ProgressCallback",
    "SegmentLog",
    "SimulationOptions",
    "SimulationResult",
    "Simulator",
    "arrow_table",
    "install_views",
    "parse_app_model",
    "resolve_options",
]
