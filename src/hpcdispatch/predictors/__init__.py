"""Job-duration predictors: W (wall-time), L2 (last two), D (data-driven), R (oracle).

A predictor is chosen by name or short name (``walltime``/``W``, ``last-two``/``L2``,
``data-driven``/``D``, ``oracle``/``R``); a dispatcher spec may carry one as a suffix:
``easy-L2``, ``sjf-R:allocator=best-fit`` (parsed by :mod:`hpcdispatch.dispatchers.spec`).
The contract every predictor implements, and W, are in :mod:`hpcdispatch.protocol.predictor`.
``PREDICTORS`` maps each name to its class.
"""

from __future__ import annotations

from hpcdispatch.errors import ConfigError
from hpcdispatch.predictors.data_driven import DataDrivenPredictor
from hpcdispatch.predictors.last_two import LastTwoPredictor
from hpcdispatch.predictors.oracle import OraclePredictor
from hpcdispatch.protocol.predictor import Predictor, WallTimePredictor

PREDICTORS: dict[str, type[Predictor]] = {
    cls.name: cls
    for cls in (WallTimePredictor, LastTwoPredictor, DataDrivenPredictor, OraclePredictor)
}


def predictor_class(name: str) -> type[Predictor] | None:
    """The predictor class called ``name`` (its name, short name or an alias), or None."""
    key = name.strip().lower()
    for cls in PREDICTORS.values():
        if key in (cls.name, cls.short.lower(), *cls.aliases):
            return cls
    return None


def make_predictor(name: str) -> Predictor:
    """A new predictor called ``name``; an unknown name is a one-line ConfigError."""
    cls = predictor_class(name)
    if cls is None:
        known = ", ".join(f"{c.name} ({c.short})" for c in PREDICTORS.values())
        raise ConfigError(f"unknown predictor '{name}'; available: {known}")
    return cls()


__all__ = [
    "PREDICTORS",
    "DataDrivenPredictor",
    "LastTwoPredictor",
    "OraclePredictor",
    "Predictor",
    "WallTimePredictor",
    "make_predictor",
    "predictor_class",
]
