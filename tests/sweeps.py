"""Shared by the sweep tests: small sweep files, reading a sweep's results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
from helpers import pythonpath

SMALL = """
name = "small"
dispatchers = ["fifo", "easy", "sjf"]

[[workloads]]
generator = "lublin"
jobs = {jobs}
load = 0.9
seeds = [1, 2]
"""


def write_spec(directory: Path, text: str, name: str = "sweep.toml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    return path


def cli(*args: str, timeout: float = 600, terminal: bool = False) -> subprocess.CompletedProcess:
    """``hpcdispatch ARGS`` in a subprocess; ``terminal``: rich takes the pipe for a terminal
    (``FORCE_COLOR``), as on an interactive console."""
    env = {
        "COLUMNS": "200",
        "PATH": "/usr/bin:/bin",
        **pythonpath(),
        **({"FORCE_COLOR": "1"} if terminal else {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "hpcdispatch", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def records(out: Path) -> dict[str, dict]:
    """cell id -> cell.json of every published cell directory."""
    return {
        p.name: json.loads((p / "cell.json").read_text())
        for p in (out / "cells").iterdir()
        if not p.name.startswith(".")
    }


def summary(out: Path) -> pd.DataFrame:
    return pd.read_parquet(out / "summary.parquet")
