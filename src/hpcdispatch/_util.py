"""Small shared helpers."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small objects.

    Building half a million job tuples otherwise triggers dozens of full collections and
    costs more than the objects themselves. Reference counting still frees memory.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def json_default(value: Any) -> Any:
    """``json.dumps(default=...)`` for numpy scalars and arrays; anything else as text."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)
