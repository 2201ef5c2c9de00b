"""Job-duration predictors (wall-time now; last-two, data-driven and oracle arrive with issue 3)."""

from hpcdispatch.predictors.base import Predictor, WallTimePredictor

PREDICTORS: dict[str, type[Predictor]] = {"walltime": WallTimePredictor}


def make_predictor(name: str) -> Predictor:
    from hpcdispatch.errors import ConfigError

    aliases = {cls.short.lower(): key for key, cls in PREDICTORS.items()}
    key = aliases.get(name.lower(), name.lower())
    if key not in PREDICTORS:
        raise ConfigError(f"unknown predictor '{name}'; available: {', '.join(sorted(PREDICTORS))}")
    return PREDICTORS[key]()


__all__ = ["PREDICTORS", "Predictor", "WallTimePredictor", "make_predictor"]
